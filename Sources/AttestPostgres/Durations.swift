extension Duration {
    /// The duration in whole nanoseconds, saturating at ±`Int64.max / 2` (about 146 years), so
    /// that neither the conversion nor the difference of two such values can overflow.
    public var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (wide, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let limit = Int64.max / 2
        guard !overflow, wide > -limit, wide < limit else { return seconds < 0 ? -limit : limit }
        return wide + attoseconds / 1_000_000_000
    }
}

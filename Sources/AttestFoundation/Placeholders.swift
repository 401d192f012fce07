extension String {
    /// The text with each `{name}` of `values` replaced, in one pass: a value is never read
    /// for a placeholder.
    public func filled(_ values: [String: String]) -> String {
        var result = "", rest = self[...]
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            result += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            if let value = values[name] { result += value } else { result += rest[open...close] }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}

import Metrics

/// What the submission path counts, through swift-metrics (the server exports it as
/// Prometheus text at `/metrics`; the README lists every series). No label carries a
/// campus, a member or an answer: only outcomes, whose number is fixed.
public struct SubmissionMetrics: Sendable {
    /// `attest_submissions_total{outcome}`: created, replayed (same Idempotency-Key),
    /// already_submitted (409), key_reused (the same key with another body: 422), failed
    /// (the write failed; the caller got a 5xx or 503).
    let created, replayed, alreadySubmitted, keyReused, failed: Counter
    /// `attest_write_batch_size`: submissions per batched write (histogram).
    let batchSize: Recorder
    /// `attest_write_batch_seconds`: how long a batch took to write, conflicts read back included.
    let batchDuration: CoreMetrics.Timer
    /// `attest_write_batches_split_total`: batches that failed as a whole and were written
    /// again one submission per transaction.
    let batchesSplit: Counter
    /// `attest_badge_rule_failures_total{reason}`: rule unavailable, error, gray answer or
    /// over its time budget; each gave yellow "needs review".
    let ruleUnavailable, ruleError, ruleGray, ruleOverran: Counter

    /// Bucket bounds for the histograms above, for a factory that takes them per label.
    public static let batchSizeBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        func outcome(_ name: String) -> Counter {
            Counter(label: "attest_submissions_total", dimensions: [("outcome", name)], factory: factory)
        }
        func rule(_ reason: String) -> Counter {
            Counter(label: "attest_badge_rule_failures_total", dimensions: [("reason", reason)], factory: factory)
        }
        created = outcome("created")
        replayed = outcome("replayed")
        alreadySubmitted = outcome("already_submitted")
        keyReused = outcome("key_reused")
        failed = outcome("failed")
        batchSize = Recorder(label: "attest_write_batch_size", dimensions: [], aggregate: true, factory: factory)
        batchDuration = CoreMetrics.Timer(label: "attest_write_batch_seconds", dimensions: [], factory: factory)
        batchesSplit = Counter(label: "attest_write_batches_split_total", dimensions: [], factory: factory)
        ruleUnavailable = rule("unavailable")
        ruleError = rule("error")
        ruleGray = rule("gray")
        ruleOverran = rule("overran")
    }

    func count(_ outcome: Result<WriteOutcome, any Error>) {
        switch outcome {
        case .success(.created): created.increment()
        case .success(.replayed): replayed.increment()
        case .success(.alreadySubmitted): alreadySubmitted.increment()
        case .success(.keyReused): keyReused.increment()
        case .failure: failed.increment()
        }
    }
}

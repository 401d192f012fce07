import AttestPlugins
import AttestPostgres
import Foundation
import Synchronization

/// Plugins built from campuses' settings, kept while their settings stand (a provider keeps
/// its own caches), by a key of the plugin's id and its settings as sorted JSON.
public final class PluginInstances<Plugin: Sendable>: Sendable {
    private let built = Mutex<[String: Plugin]>([:])

    public init() {}

    /// `id` and `settings` as one key: the same settings, whatever their members' order, the same key.
    public static func key(id: String, settings: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return "\(id)/\(String(decoding: (try? encoder.encode(settings)) ?? Data(), as: UTF8.self))"
    }

    /// The plugin kept under `key`, else the one `make` builds (kept; at most 10,000).
    public func instance(key: String, make: () throws -> Plugin) rethrows -> Plugin {
        if let existing = built.withLock({ $0[key] }) { return existing }
        let made = try make()
        built.withLock { plugins in
            if plugins.count > 10_000 { plugins.removeAll() }
            plugins[key] = made
        }
        return made
    }
}

/// A plugin's answer within `budget`: the call runs on its own task (a provider that overruns
/// keeps working, to fill its cache for the next request); nil when the budget ran out first.
public func result<Value: Sendable>(
    within budget: Duration, _ call: @escaping @Sendable () async throws -> Value
) async -> Result<Value, any Error>? {
    let task = Task { try await call() }
    return await withCheckedContinuation { continuation in
        let once = ResumeOnce()
        let timer = Task {
            guard (try? await timerSleep(for: budget)) != nil, once.claim() else { return }
            continuation.resume(returning: nil)
        }
        Task {
            let result = await task.result
            timer.cancel()
            if once.claim() { continuation.resume(returning: result) }
        }
    }
}

/// Lets exactly one of two racers resume a continuation.
public final class ResumeOnce: Sendable {
    private let done = Atomic<Bool>(false)
    public init() {}
    /// True for the first caller only.
    public func claim() -> Bool { !done.exchange(true, ordering: .acquiringAndReleasing) }
}

import Foundation
import Synchronization

/// Maps plugin ids to the factories that build them from a campus's settings.
///
/// Like swift-log's `LoggingSystem`, it is set up once by the executable (`attest` registers
/// the built-in plugins; a deployment's own executable adds its own) and handed to the
/// platform; tests build their own registries instead of touching a global.
public struct PluginRegistry: Sendable {
    /// Builds a badge rule from its settings (and the campus's active questionnaire, to check
    /// that the settings refer to questions that exist). Throws `PluginSettingsError`.
    public typealias BadgeRuleFactory = @Sendable (_ settings: JSONValue, _ questionnaire: Questionnaire?) throws -> any BadgeRule

    /// Builds a notification sink from a campus's settings. Throws `PluginSettingsError`.
    public typealias SinkFactory = @Sendable (_ settings: JSONValue) throws -> any NotificationSink

    private var badgeRules = Factories<BadgeRuleFactory>(noun: "badge rule")
    private var sinks = Factories<SinkFactory>(noun: "sink", builtIn: PluginRegistry.memberChannelIDs)

    /// The sinks the platform serves itself to reach members (Notifications' `MemberChannels`):
    /// listed, never registered, built by the outbox worker.
    public static let memberChannelIDs = ["email", "terminal", "web-push"]

    /// Builds a testing-location provider from a campus's settings. Throws `PluginSettingsError`.
    public typealias TestingLocationProviderFactory = @Sendable (_ settings: JSONValue) throws -> any TestingLocationProvider
    private var providers = Factories<TestingLocationProviderFactory>(
        noun: "testing-locations provider", builtIn: [PluginRegistry.staticProviderID])

    /// The provider id the platform serves itself from the `testing_locations` table.
    public static let staticProviderID = "static"

    /// Registers a testing-location provider under a stable id; a later registration replaces it.
    public mutating func registerTestingLocationProvider(id: String, factory: @escaping TestingLocationProviderFactory) {
        providers.register(id, factory)
    }

    /// The registered provider ids and `static`, sorted.
    public var testingLocationProviderIDs: [String] { providers.ids }

    /// Builds provider `id` with `settings` (nil for `static`, which the platform serves).
    public func makeTestingLocationProvider(id: String, settings: JSONValue) throws -> (any TestingLocationProvider)? {
        if id == Self.staticProviderID { return nil }
        return try providers.factory(id)(settings)
    }

    /// Builds a community-data provider from a campus's settings. Throws `PluginSettingsError`.
    public typealias CommunityDataProviderFactory = @Sendable (_ settings: JSONValue) throws -> any CommunityDataProvider
    private var communityProviders = Factories<CommunityDataProviderFactory>(
        noun: "community-data provider", builtIn: [PluginRegistry.importedProviderID])

    /// The community-data provider the platform serves itself from the shared tables that
    /// `attest community import` fills; its one setting is `dataset`: a name, or a list of up
    /// to five (`["us-counties", "us-national", "world"]`), the first holding a region answering.
    public static let importedProviderID = "imported"

    /// The dataset names of the `imported` provider's settings, in order; nil when `dataset` is
    /// neither a text nor a list of texts.
    public static func importedDatasets(_ settings: JSONValue) -> [String]? {
        switch settings["dataset"] {
        case .string(let name)?: return [name]
        case .array(let items)?:
            return items.reduce(into: [String]?([])) { names, item in
                if case .string(let name) = item { names?.append(name) } else { names = nil }
            }
        default: return nil
        }
    }

    /// Registers a community-data provider under a stable id; a later registration replaces it.
    public mutating func registerCommunityDataProvider(id: String, factory: @escaping CommunityDataProviderFactory) {
        communityProviders.register(id, factory)
    }

    /// The registered community-data provider ids and `imported`, sorted.
    public var communityDataProviderIDs: [String] { communityProviders.ids }

    /// Builds community-data provider `id` with `settings` (nil for `imported`, which the
    /// platform serves). The platform itself reads `riskThresholds` and `guidance`
    /// (`CommunityRiskSettings`) and, for `imported`, `dataset`, and checks them here.
    public func makeCommunityDataProvider(id: String, settings: JSONValue) throws -> (any CommunityDataProvider)? {
        _ = try CommunityRiskSettings(settings: settings)
        if id == Self.importedProviderID {
            guard let names = Self.importedDatasets(settings), !names.isEmpty, names.count <= 5, names.allSatisfy(Self.isValidID) else {
                throw PluginSettingsError(
                    "dataset is required: the name given to `attest community import --dataset NAME` (a-z, 0-9, '.', '_', '-'), or a list of up to five such names, the first that has a region answering for it"
                )
            }
            return nil
        }
        return try communityProviders.factory(id)(settings)
    }

    /// Builds a context provider from a campus's settings. Throws `PluginSettingsError`.
    public typealias ContextProviderFactory = @Sendable (_ settings: JSONValue) throws -> any ContextProvider
    private var contextProviders = Factories<ContextProviderFactory>(
        noun: "context provider", builtIn: [PluginRegistry.noContextProviderID])

    /// The context provider that answers nothing: episodes without weather (the default).
    public static let noContextProviderID = "none"

    /// Registers a context provider under a stable id; a later registration replaces it.
    public mutating func registerContextProvider(id: String, factory: @escaping ContextProviderFactory) {
        contextProviders.register(id, factory)
    }

    /// The registered context provider ids and `none`, sorted.
    public var contextProviderIDs: [String] { contextProviders.ids }

    /// Builds context provider `id` with `settings` (nil for `none`).
    public func makeContextProvider(id: String, settings: JSONValue) throws -> (any ContextProvider)? {
        if id == Self.noContextProviderID { return nil }
        return try contextProviders.factory(id)(settings)
    }

    public init() {}

    private var secrets: [String: Set<String>] = [:]
    private var settingsChecks: [String: SettingsCheck] = [:]

    /// Declares which top-level settings of plugin `id` of `kind` are secrets (a signing key,
    /// a URL that carries an API key). The platform stores them sealed under the operator's
    /// key-encryption key apart from the other settings, re-wraps them with `attest keys
    /// rotate-kek`, shows them in no listing and hands them to the plugin's factory as if they
    /// were plain. A setting named like a secret (`secret`, `password`, `token`, `apiKey`) is
    /// sealed whether declared or not.
    public mutating func declareSecretSettings(_ names: Set<String>, kind: PluginKind, id: String) {
        secrets["\(kind.rawValue)/\(id)", default: []].formUnion(names)
    }

    /// The top-level members of `settings` that are stored sealed: those declared for the
    /// plugin, those named like a secret, and those holding a member named like one.
    public func secretMembers(of settings: JSONValue, kind: PluginKind, id: String) -> Set<String> {
        guard case .object(let members) = settings else { return [] }
        let declared = secrets["\(kind.rawValue)/\(id)"] ?? []
        return Set(
            members.compactMap { name, value in declared.contains(name) || Self.looksSecret(name) || Self.holdsSecret(value) ? name : nil })
    }

    /// What `attest plugin enable` checks new settings against besides the plugin's factory:
    /// what a person surely did not mean, such as a misspelt member a factory would drop
    /// without a word ("evnts" for a webhook's `events` sent it every event). Returns each
    /// problem, naming its place. Run on settings as they are given, never on settings already
    /// stored, so that a campus's stored table keeps working.
    public typealias SettingsCheck = @Sendable (_ settings: JSONValue) -> [String]

    /// Registers the settings check of plugin `id` of `kind` (`unknownMembers` does the usual
    /// one); a later registration replaces it.
    public mutating func registerSettingsCheck(kind: PluginKind, id: String, _ check: @escaping SettingsCheck) {
        settingsChecks["\(kind.rawValue)/\(id)"] = check
    }

    /// The problems of new settings for plugin `id` of `kind` that its settings check finds
    /// (none for a plugin without one).
    public func settingsProblems(_ settings: JSONValue, kind: PluginKind, id: String) -> [String] {
        settingsChecks["\(kind.rawValue)/\(id)"]?(settings) ?? []
    }

    /// Each member of `value` (when it is an object) that is not one of `allowed`, naming its
    /// place and what is allowed there: `rules[0].lastDays is not a setting here (when, color,
    /// reason, lastsDays, translations)`.
    public static func unknownMembers(of value: JSONValue?, allowed: [String], at path: String = "") -> [String] {
        guard case .object(let members)? = value else { return [] }
        let known = allowed.isEmpty ? "none is taken" : allowed.joined(separator: ", ")
        return members.keys.sorted().filter { !allowed.contains($0) }.map { key in
            "\(path.isEmpty ? "" : path + ".")\(key.isEmpty ? #""""# : key) is not a setting here (\(known))"
        }
    }

    /// A member name that says it holds a secret.
    public static func looksSecret(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return secretWords.contains { lowered.contains($0) }
    }

    static let secretWords = ["secret", "password", "token", "apikey", "api_key", "privatekey", "private_key"]

    /// Lowercased words at least one of which a setting's text holds when one of its members
    /// may be secret: the words `looksSecret` looks for and every declared secret name.
    public var secretHints: [String] {
        Array(Set(Self.secretWords + secrets.values.flatMap { $0.map { $0.lowercased() } })).sorted()
    }

    static func holdsSecret(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let members): members.contains { looksSecret($0.key) || holdsSecret($0.value) }
        case .array(let items): items.contains(where: holdsSecret)
        default: false
        }
    }

    /// Registers a badge rule under a stable id (`[a-z0-9._-]+`); a later registration of
    /// the same id replaces the earlier one.
    public mutating func registerBadgeRule(id: String, factory: @escaping BadgeRuleFactory) {
        badgeRules.register(id, factory)
    }

    /// The registered badge rule ids, sorted.
    public var badgeRuleIDs: [String] { badgeRules.ids }

    /// Builds the rule `id` with `settings`. Throws `PluginSettingsError` for an unknown id or
    /// settings the rule refuses.
    public func makeBadgeRule(id: String, settings: JSONValue, questionnaire: Questionnaire?) throws -> any BadgeRule {
        try badgeRules.factory(id)(settings, questionnaire)
    }

    /// Registers a notification sink under a stable id; a later registration replaces it. The
    /// member channels' ids (`memberChannelIDs`) are the platform's: registering one traps.
    public mutating func registerSink(id: String, factory: @escaping SinkFactory) {
        precondition(!Self.memberChannelIDs.contains(id), "sink id \(id) is the platform's own channel to members; choose another id")
        sinks.register(id, factory)
    }

    /// The registered sink ids, sorted.
    public var sinkIDs: [String] { sinks.ids }

    /// Builds the sink `id` with `settings`. Throws `PluginSettingsError` for an unknown id or
    /// settings the sink refuses. The platform itself reads `events` (a list of event names
    /// the sink wants; all when absent) and checks it here.
    public func makeSink(id: String, settings: JSONValue) throws -> any NotificationSink {
        let factory = try sinks.factory(id)
        if let events = settings["events"] {
            guard case .array(let names) = events, !names.isEmpty else {
                throw PluginSettingsError("events must be a non-empty list of event names, such as [\"badge.red\"]")
            }
            for name in names {
                guard case .string(let text) = name, NotificationEvent(rawValue: text) != nil else {
                    throw PluginSettingsError(
                        "events: unknown event \(Self.describe(name)); use \(NotificationEvent.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
            }
        }
        return try factory(settings)
    }

    /// A settings value as a person would write it in JSON.
    static func describe(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"
    }

    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 64 && id.first != "." && id.first != "-"
            && id.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }
}

/// One plugin point's factories by id: what registering, listing and building share for
/// every kind.
struct Factories<Factory: Sendable>: Sendable {
    private var byID: [String: Factory] = [:]
    /// What the errors call a plugin of this kind ("badge rule").
    let noun: String
    /// Ids the platform serves itself: listed, never registered.
    let builtIn: [String]

    init(noun: String, builtIn: [String] = []) {
        self.noun = noun
        self.builtIn = builtIn
    }

    /// A later registration of the same id replaces the earlier one.
    mutating func register(_ id: String, _ factory: Factory) {
        precondition(PluginRegistry.isValidID(id), "plugin ids are [a-z0-9._-]+, got \(id)")
        byID[id] = factory
    }

    /// The registered ids and the built-in ones, sorted.
    var ids: [String] { (Array(byID.keys) + builtIn).sorted() }

    /// The factory of `id`, or `PluginSettingsError` naming what this build has.
    func factory(_ id: String) throws -> Factory {
        guard let factory = byID[id] else {
            throw PluginSettingsError(
                "no \(noun) \"\(id)\" in this build: available are \(ids.isEmpty ? "none" : ids.joined(separator: ", "))")
        }
        return factory
    }
}

/// The process's plugin registry, set once by the executable before anything runs (like
/// `LoggingSystem.bootstrap`). Libraries take a `PluginRegistry` from their caller and use
/// this only as the default; tests pass their own.
public enum PluginSystem {
    private static let state = Mutex<(registry: PluginRegistry, bootstrapped: Bool)>((PluginRegistry(), false))

    /// Sets the registry. Call it once, first thing in `main`.
    public static func bootstrap(_ registry: PluginRegistry) {
        state.withLock { state in
            precondition(!state.bootstrapped, "PluginSystem.bootstrap may be called only once per process")
            state = (registry, true)
        }
    }

    /// The registry set by `bootstrap` (empty before it).
    public static var registry: PluginRegistry { state.withLock { $0.registry } }
}

/// The plugin points a campus configures.
public enum PluginKind: String, Sendable, CaseIterable, Codable {
    /// Decides badges; a campus uses one (else `standard` with its default table).
    case badgeRule = "badge-rule"
    /// Lists testing locations; a campus may enable several.
    case testingLocations = "testing-locations"
    /// Receives notifications; a campus may enable several.
    case sink = "sink"
    /// Public-health figures of the campus's region; a campus uses one.
    case communityData = "community-data"
    /// Weather and air around members' episodes; a campus uses one.
    case context = "context"
}

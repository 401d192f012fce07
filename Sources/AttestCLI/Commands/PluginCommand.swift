import ArgumentParser
import AttestPlugins
import Foundation
import Notifications
import Surveys
import Tenancy

struct PluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin", abstract: "Choose a campus's badge rule and other plugins, with their settings.",
        subcommands: [List.self, Enable.self, Disable.self])
}

extension PluginKind: ExpressibleByArgument {}

extension PluginCommand {
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The plugins this build offers, or (with a campus) those the campus has enabled.")
        @Argument(help: "A campus slug.") var campus: String?
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let registry = PluginSystem.registry
            guard let campus else {
                let available = [
                    "badge-rule": registry.badgeRuleIDs, "sink": registry.sinkIDs, "testing-locations": registry.testingLocationProviderIDs,
                    "community-data": registry.communityDataProviderIDs, "context": registry.contextProviderIDs,
                ]
                if json { return printJSONObject(available) }
                for (kind, ids) in available.sorted(by: { $0.key < $1.key }) {
                    say("\(kind): \(ids.isEmpty ? "(none in this build)" : ids.joined(separator: ", "))")
                }
                return
            }
            let enabled = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await CampusPluginStore(client: context.client).list(campus: found.id)
            }
            if json {
                return printJSONObject(
                    enabled.map { plugin -> [String: Any] in
                        [
                            "kind": plugin.kind.rawValue, "id": plugin.id, "enabledAt": plugin.enabledAt.ISO8601Format(),
                            "sealed": plugin.sealed,
                            "settings":
                                (try? JSONSerialization.jsonObject(
                                    with: JSONEncoder().encode(Self.shown(plugin)), options: .fragmentsAllowed)) ?? NSNull(),
                        ]
                    })
            }
            if enabled.allSatisfy({ $0.kind != .badgeRule }) {
                say("badge-rule standard (default table; none enabled)")
            }
            if enabled.allSatisfy({ $0.kind != .testingLocations }) {
                say("testing-locations static (the campus's own locations; none enabled)")
            }
            for plugin in enabled {
                let settings = (try? String(decoding: JSONEncoder().encode(Self.shown(plugin)), as: UTF8.self)) ?? ""
                say("\(plugin.kind.rawValue) \(plugin.id) \(settings)")
            }
        }

        /// A plugin's settings as shown: the sealed ones (never opened here) as `(sealed)`, and
        /// any other value under a key that looks like a secret hidden.
        static func shown(_ plugin: CampusPluginStore.Enabled) -> JSONValue {
            guard case .object(var members) = redacted(plugin.settings) else { return redacted(plugin.settings) }
            for name in plugin.sealed { members[name] = .string("(sealed)") }
            return .object(members)
        }

        static func redacted(_ value: JSONValue) -> JSONValue {
            switch value {
            case .object(let object):
                var shown: [String: JSONValue] = [:]
                for (key, item) in object { shown[key] = PluginRegistry.looksSecret(key) ? .string("(hidden)") : redacted(item) }
                return .object(shown)
            case .array(let items): return .array(items.map(redacted))
            default: return value
            }
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable a plugin for a campus (again: replace its settings).",
            discussion: """
                Settings are checked before anything is stored. A campus has one badge rule, one \
                community-data provider and one context provider: enabling one replaces the last. Servers pick the change up within 5 seconds. Examples:
                  attest plugin enable demo badge-rule standard --settings rules.json
                  attest plugin enable demo sink webhook --settings - < webhook.json
                  attest plugin enable demo testing-locations json-feed --settings '{"url": "https://health.example.edu/sites.json"}'
                  attest plugin enable demo community-data imported --settings '{"dataset": "us-counties"}'
                Settings that hold a secret (a member named secret, password, token or apiKey) come \
                from a file or standard input, never the command line, where anyone on the machine can \
                read them. The settings a plugin declares secret (a webhook's secret and URL, the feeds' \
                URLs) and any named like one are stored sealed under the key-encryption key: pass \
                --kek-file. A sink receives the events written after it is enabled.
                """)
        @Argument(help: "The campus slug.") var campus: String
        @Argument(help: "badge-rule, testing-locations, sink, community-data or context.") var kind: PluginKind
        @Argument(help: "The plugin id (`attest plugin list` shows them).") var id: String
        @Option(
            help: ArgumentHelp(
                "A JSON file with the plugin's settings, - for standard input, or the JSON itself ('{…}', no secrets). Without it, the plugin's defaults.",
                valueName: "file"))
        var settings: String?
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            var value = try readSettings()
            // What the plugin would pass over without a word (a misspelt member), refused by name.
            let problems = PluginSystem.registry.settingsProblems(value, kind: kind, id: id)
            if !problems.isEmpty {
                throw CLIError(
                    "\(kind.rawValue) \(id) refused these settings: \(problems.prefix(5).joined(separator: "; "))"
                        + (problems.count > 5 ? " (and \(problems.count - 5) more)" : "") + "; nothing was changed")
            }
            if kind == .sink, MemberChannels.ids.contains(id) {
                // The DKIM key file is read now, once, and stored sealed with the password.
                do { value = try MemberChannels.prepare(id: id, settings: value) } catch {
                    throw CLIError("sink \(id) refused these settings: \(error.message); nothing was changed")
                }
            }
            let registry = PluginSystem.registry
            let secret = registry.secretMembers(of: value, kind: kind, id: id)
            var kek: KeyEncryptionKey?
            if !secret.isEmpty {
                guard let key = try keys.load(for: database) else {
                    throw CLIError(
                        "these settings hold secrets (\(secret.sorted().joined(separator: ", "))), which are stored sealed under the key-encryption key: pass --kek-file (or set ATTEST_KEK_FILE)"
                    )
                }
                kek = key
            }
            try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let found = try await context.campuses.require(slug: campus)
                switch kind {
                case .badgeRule:
                    let questionnaire = try await QuestionnaireStore(client: context.client).active(campus: found.id)
                    do { _ = try registry.makeBadgeRule(id: id, settings: value, questionnaire: questionnaire) } catch let error
                        as PluginSettingsError
                    {
                        throw CLIError("badge rule \(id) refused these settings: \(error.message); nothing was changed")
                    }
                case .sink where MemberChannels.ids.contains(id):
                    break  // checked above
                case .sink:
                    do { _ = try registry.makeSink(id: id, settings: value) } catch let error as PluginSettingsError {
                        throw CLIError("sink \(id) refused these settings: \(error.message); nothing was changed")
                    }
                case .testingLocations:
                    do { _ = try registry.makeTestingLocationProvider(id: id, settings: value) } catch let error as PluginSettingsError {
                        throw CLIError("testing-locations provider \(id) refused these settings: \(error.message); nothing was changed")
                    }
                case .communityData:
                    do { _ = try registry.makeCommunityDataProvider(id: id, settings: value) } catch let error as PluginSettingsError {
                        throw CLIError("community-data provider \(id) refused these settings: \(error.message); nothing was changed")
                    }
                case .context:
                    do { _ = try registry.makeContextProvider(id: id, settings: value) } catch let error as PluginSettingsError {
                        throw CLIError("context provider \(id) refused these settings: \(error.message); nothing was changed")
                    }
                }
                try await CampusPluginStore(client: context.client, kek: kek).enable(
                    campus: found, kind: kind, id: id, settings: value, secret: secret, actor: TenantContext.actor)
            }
            say("Enabled \(kind.rawValue) \(id) for \(campus).")
        }

        func readSettings(standardInput: () -> Data? = { try? FileHandle.standardInput.readToEnd() }) throws -> JSONValue {
            guard let settings else { return .null }
            let trimmed = settings.trimmingCharacters(in: .whitespacesAndNewlines)
            let inline = trimmed.hasPrefix("{") || trimmed.hasPrefix("[")
            let data: Data
            if inline {
                data = Data(trimmed.utf8)
            } else if settings == "-" {
                guard let read = standardInput() else { throw CLIError("cannot read --settings - from standard input") }
                data = withoutByteOrderMark(read)
            } else {
                let path = settings.hasPrefix("@") ? String(settings.dropFirst()) : settings
                data = try readTextFile(path, "a JSON file, - for standard input, or the JSON itself", option: "--settings")
            }
            let value: JSONValue
            do { value = try JSONValue(parsing: data) } catch {
                throw CLIError("--settings is not valid JSON (\(error)): check the file")
            }
            if inline, let name = Self.secretMember(in: value) {
                throw CLIError(
                    "--settings holds \"\(name)\" on the command line, where anyone on this machine can read it: put the settings in a file (--settings FILE) or pass them on standard input (--settings -)"
                )
            }
            return value
        }

        /// The name of a member that holds a secret, anywhere in `value`.
        static func secretMember(in value: JSONValue) -> String? {
            switch value {
            case .object(let members):
                for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                    if PluginRegistry.looksSecret(name) { return name }
                    if let nested = secretMember(in: member) { return nested }
                }
                return nil
            case .array(let items): return items.lazy.compactMap(secretMember(in:)).first
            default: return nil
            }
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a campus's plugin (a campus without a badge rule uses standard with its default table).")
        @Argument var campus: String
        @Argument var kind: PluginKind
        @Argument var id: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let removed = try await TenantContext.run(database: database, logging: logging) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await CampusPluginStore(client: context.client).disable(
                    campus: found, kind: kind, id: id, actor: TenantContext.actor)
            }
            guard removed else {
                throw CLIError("\(campus) has no \(kind.rawValue) \(id) enabled: `attest plugin list \(campus)` shows what is")
            }
            say("Disabled \(kind.rawValue) \(id) for \(campus).")
        }
    }
}

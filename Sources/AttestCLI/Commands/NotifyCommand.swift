import ArgumentParser
import AttestPluginHTTP
import AttestPlugins
import Foundation
import Identity
import Notifications
import Surveys
import Tenancy

/// `attest notify test`: one message now, to see that a campus's channel reaches people.
struct NotifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify", abstract: "Try a campus's channels to members.", subcommands: [Test.self])
}

extension NotifyCommand {
    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a member today's reminder now through the campus's email or web-push channel, and say in one line what failed.",
            discussion: """
                The member must belong to the campus (the message carries their own unsubscribe link). \
                Nothing is written: no outbox row, no preference changed.
                """)
        @Argument(help: "The campus slug.") var campus: String
        @Argument(help: "The member's email address.") var email: String
        @Option(help: "The channel: email or push.") var channel = "email"
        @Option(help: "The pages' public address, the base of the message's links (as `serve --public-url`).")
        var publicURL = "http://127.0.0.1:8080"
        @Option(
            name: .customLong("allow-outbound-host"),
            help:
                "A host plain SMTP (\"security\": \"none\") or a push service on a private address may reach, as `serve` allows it; repeat for more."
        )
        var outboundHosts: [String] = []
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            guard channel == "email" || channel == "push" else { throw CLIError("--channel \(channel): give email or push") }
            guard let kek = try keys.load(for: database) else {
                throw CLIError(
                    "the channel's settings and the unsubscribe link need the key-encryption key: pass --kek-file (or set ATTEST_KEK_FILE)")
            }
            let origin = publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL
            let sink = channel == "email" ? MemberChannels.email : MemberChannels.webPush
            let sent = try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let found = try await context.campuses.require(slug: campus)
                guard
                    let settings = try await CampusPluginStore(client: context.client, kek: kek).settings(
                        campus: found.id, kind: .sink, id: sink)
                else {
                    throw CLIError(
                        "\(campus) has no \(sink) channel: enable it with `attest plugin enable \(campus) sink \(sink) --settings FILE` (README, Notifications)"
                    )
                }
                guard let user = try await UserStore(client: context.client).find(campus: found.id, email: email.lowercased()) else {
                    throw CLIError("\(email) is no member of \(campus): the test goes to a member, whose unsubscribe link it carries")
                }
                let language =
                    try await NotificationPreferenceStore(client: context.client).preferences(campus: found.id, user: user.id).language
                    ?? "en"
                let secret = try await BadgeKeyStore(client: context.client, kek: kek).subjectKey(campus: found.id)
                do {
                    if channel == "push" {
                        let http = AsyncPluginHTTPClient(policy: .init(allowedHosts: Set(outboundHosts)))
                        let count = try await MemberChannels.sendTestPush(
                            settings: settings, campus: found, user: user.id, name: user.displayName, address: user.email,
                            language: language, origin: origin, unsubscribeSecret: secret, client: context.client, kek: kek, http: http)
                        return "\(count) browser\(count == 1 ? "" : "s") (web-push)"
                    }
                    return try await MemberChannels.sendTestReminder(
                        settings: settings, campus: found, user: user.id, name: user.displayName, address: user.email, language: language,
                        origin: origin, unsubscribeSecret: secret, allowedHosts: Set(outboundHosts))
                } catch let error as PluginSettingsError {
                    throw CLIError("the \(sink) channel's settings are wrong: \(error.message); fix them with `attest plugin enable`")
                } catch let error as SMTPFailure {
                    throw CLIError("not sent: \(error)")
                } catch let error as PushTestFailure {
                    throw CLIError("not sent: \(error)")
                }
            }
            say("Sent \(campus)'s reminder to \(email) through \(sent).")
        }
    }
}

/// `attest push keys new <campus>`: a new VAPID key for the campus's Web Push.
struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "A campus's Web Push key.", subcommands: [Keys.self])

    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A campus's VAPID key.", subcommands: [New.self])
    }

    struct New: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the campus a new VAPID key (sealed) and forget its browsers' subscriptions.",
            discussion: """
                A campus gets its key on first use; make a new one when the old may have leaked. Browsers \
                subscribed with the old key can no longer be reached: their members subscribe again on Settings.
                """)
        @Argument(help: "The campus slug.") var campus: String
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            guard let kek = try keys.load(for: database) else {
                throw CLIError("the key is stored sealed under the key-encryption key: pass --kek-file (or set ATTEST_KEK_FILE)")
            }
            let publicKey = try await TenantContext.run(database: database, logging: logging, sealingWith: kek) { context in
                let found = try await context.campuses.require(slug: campus)
                return try await PushKeyStore(client: context.client, kek: kek).renew(campus: found, actor: TenantContext.actor)
            }
            say("\(campus) has a new VAPID key; its public key (GET /v1/campuses/\(campus)/push-key): \(publicKey)")
        }
    }
}

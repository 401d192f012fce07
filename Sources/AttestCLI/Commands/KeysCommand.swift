import ArgumentParser
import Foundation
import Identity
import Surveys
import Tenancy

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "The key-encryption key that seals every campus's badge keys.",
        discussion: """
            Badge-signing keys are stored sealed (AES-256-GCM) under a key-encryption key the operator \
            keeps outside the database: in a file (--kek-file, or $ATTEST_KEK_FILE) or in $ATTEST_KEK. \
            `serve` refuses to start without it; a server only verifying badges would need only the \
            public keys of GET …/badge-keys.
            """,
        subcommands: [NewKEK.self, RotateKEK.self])
}

extension KeysCommand {
    struct NewKEK: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-kek",
            abstract: "Print a new random key-encryption key (base64) on standard output.",
            discussion: "attest keys new-kek > /etc/attest/kek && chmod 600 /etc/attest/kek")

        func run() throws {
            let (key, text) = KeyEncryptionKey.generate()
            say(text)
            FileHandle.standardError.write(
                Data("Key \(key.id): store it where only the server reads it (chmod 600) and pass --kek-file; keep a copy safe, the badge keys do not open without it.\n".utf8))
        }
    }

    struct RotateKEK: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-kek",
            abstract: "Re-wrap every campus's sealed keys from the current key-encryption key to a new one.",
            discussion: """
                The current key comes from --kek-file (or the environment), the new one from --new-kek-file. \
                Only the data keys are re-sealed; a campus already under the new key is left as it is, so \
                an interrupted run can be run again. Restart the servers with the new key afterwards.
                """)
        @Option(help: ArgumentHelp("A file holding the new key-encryption key.", valueName: "file")) var newKekFile: String
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let old = try keys.require()
            var newOptions = KeyOptions()
            newOptions.kekFile = newKekFile
            guard let new = try newOptions.load(environment: [:]) else { throw CLIError("--new-kek-file names no key") }
            guard new.id != old.id else { throw CLIError("the new key-encryption key is the current one (\(old.id)): make a new one with `attest keys new-kek`") }
            let counts = try await TenantContext.run(database: database, logging: logging) { context in
                var counts: [String: Int] = [:]
                for campus in try await context.campuses.list() {
                    counts[campus.slug] = try await BadgeKeyStore.rewrap(
                        client: context.client, campus: campus.id, from: old, to: new, actor: TenantContext.actor)
                        + OIDCIssuerStore.rewrap(client: context.client, campus: campus.id, from: old, to: new)
                }
                return counts
            }
            if json { return printJSONObject(["from": old.id, "to": new.id, "rewrapped": counts]) }
            say("Re-wrapped \(counts.values.reduce(0, +)) sealed keys of \(counts.count) campuses from \(old.id) to \(new.id); restart the servers with the new key.")
        }
    }
}

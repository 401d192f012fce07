import ArgumentParser
import Foundation
import Identity
import Surveys
import Synchronization
import Tenancy

struct KeysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "The key-encryption key that seals every campus's secrets and members' private words.",
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
                Data(
                    "Key \(key.id): store it where only the server reads it (chmod 600) and pass --kek-file; keep a copy safe, the badge keys do not open without it.\n"
                        .utf8))
        }
    }

    struct RotateKEK: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-kek",
            abstract: "Re-wrap every value sealed under the current key-encryption key (or a previous one) under a new one.",
            discussion: """
                The current key comes from --kek-file (or the environment), the new one from --new-kek-file; \
                --previous-kek-file names a key an earlier, unfinished rotation left values under. To bring values \
                sealed under another key (a campus made with the wrong key file) under the current one, give the \
                current key's file as --new-kek-file too and the other as --previous-kek-file. Every sealed \
                column is re-wrapped (badge keys, identity providers' client secrets, plugin secrets, members' \
                journal texts, recordings and episode notes), campus by campus and member by member; only the \
                data keys change. A value already under the new key is left as it is, so a run that stopped is \
                finished by running it again. Servers must open both keys while it runs: restart them first with \
                --kek-file NEW --previous-kek-file OLD, and afterwards without --previous-kek-file (README, \
                "Security model").
                """)
        @Option(help: ArgumentHelp("A file holding the new key-encryption key.", valueName: "file")) var newKekFile: String
        @Option(help: ArgumentHelp("A file holding a key an earlier rotation left values under (repeatable).", valueName: "file"))
        var previousKekFile: [String] = []
        @Flag(help: "Print JSON.") var json = false
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var keys: KeyOptions
        @OptionGroup var logging: LoggingOptions

        func run() async throws {
            let old = try keys.require(for: nil).accepting(try KeyOptions.load(files: previousKekFile, option: "--previous-kek-file"))
            guard let new = try KeyOptions.load(files: [newKekFile], option: "--new-kek-file").first else {
                throw CLIError("--new-kek-file names no key")
            }
            // The current key again as the new one brings what the previous keys sealed under it.
            let consolidating = new.id == old.id
            guard !consolidating || !old.previous.isEmpty else {
                throw CLIError(
                    "the new key-encryption key is the current one (\(old.id)): make a new one with `attest keys new-kek`, "
                        + "or name the key values are under with --previous-kek-file to bring them under the current one")
            }
            let terminal = isatty(2) == 1
            let counts = try await TenantContext.run(database: database, logging: logging) { context in
                let rotation = KeyRotation(client: context.client, columns: SealedColumns.all, from: old, to: new)
                let clock = ContinuousClock()
                let shown = Mutex(clock.now)
                return try await rotation.run(campuses: try await context.campuses.list(), actor: TenantContext.actor) { progress in
                    // A line a second on a terminal; one a campus otherwise.
                    let now = clock.now
                    let due = shown.withLock { last in
                        guard terminal ? now - last >= .seconds(1) : progress.membersDone == progress.memberCount else { return false }
                        last = now
                        return true
                    }
                    guard due else { return }
                    FileHandle.standardError.write(
                        Data(
                            ("campus \(progress.campusIndex + 1) of \(progress.campusCount) (\(progress.campus)): "
                                + "\(progress.membersDone) of \(progress.memberCount) members; \(progress.rewrapped) values re-wrapped\n")
                                .utf8))
                }
            }
            if json { return printJSONObject(["from": old.ids, "to": new.id, "rewrapped": counts]) }
            if consolidating {
                return say(
                    "Re-wrapped \(counts.values.reduce(0, +)) sealed values of \(counts.count) campuses from "
                        + "\(old.previous.map(\.id).joined(separator: ", ")) to the current key \(new.id); "
                        + "the servers need no --previous-kek-file for them now.")
            }
            say(
                "Re-wrapped \(counts.values.reduce(0, +)) sealed values of \(counts.count) campuses from \(old.ids.joined(separator: ", ")) to \(new.id); "
                    + "restart the servers with --kek-file set to the new key and no --previous-kek-file, then destroy the old key.")
        }
    }
}

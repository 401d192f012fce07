import ArgumentParser
import AttestPlugins
import AttestPostgres
import Foundation
import Records
import Tenancy

/// `attest shc`: the issuers of SMART Health Cards a campus trusts (the README, "Vaccination by
/// SMART Health Card").
struct SHCCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shc", abstract: "Trusted issuers of SMART Health Cards.", subcommands: [Directory.self, Issuer.self])

    struct Directory: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The VCI Directory, trusted by every campus.", subcommands: [Import.self])

        struct Import: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Import the VCI Directory's snapshot after checking its signature; replaces the directory whole.",
                discussion: """
                    Download vci_snapshot.json, vci_snapshot.sig and vci_snapshot.crt from \
                    github.com/the-commons-project/vci-directory (logs/). The signature (ECDSA over SHA-512 of the \
                    file, DER) is checked with the certificate's key, and the certificate must be valid today; \
                    nothing is imported otherwise. Cards whose iss is an issuer's iss are trusted and recorded under \
                    its canonical_iss when it has one. Run it as the database's owner (the role that runs `attest migrate`).
                    """)
            @Argument(help: "vci_snapshot.json") var file: String
            @Option(help: "The snapshot's detached signature (vci_snapshot.sig).") var signature: String
            @Option(help: "The directory's signing certificate, PEM or DER (vci_snapshot.crt).") var certificate: String
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws {
                let snapshot = try read(file, "the VCI snapshot (vci_snapshot.json)")
                let signatureBytes = try read(signature, "the snapshot's signature (vci_snapshot.sig)")
                let certificateBytes = try read(certificate, "the directory's certificate (vci_snapshot.crt)")
                let entries: [SHCDirectory.Entry]
                do {
                    try SHCDirectory.verify(snapshot: snapshot, signature: signatureBytes, certificate: certificateBytes, now: Date())
                    entries = try SHCDirectory.entries(snapshot: snapshot)
                } catch { throw CLIError("\(file) was not imported: \(error)") }
                let owner = try database.ownerClient(logger: logging.makeLogger(label: "attest"))
                try await runningService(owner) {
                    do { try await SHCDirectory.replace(entries, client: owner) } catch let error as PostgresError
                        where error.sqlState == "42501"
                    {
                        throw CLIError(
                            "this database login may not change the directory: import as the database's owner (the role that runs `attest migrate`)"
                        )
                    }
                }
                let keys = entries.reduce(0) { $0 + $1.keyCount }
                say("Imported \(entries.count) issuers and \(keys) keys from the VCI Directory (signature verified).")
            }
        }
    }

    struct Issuer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "A campus's own trusted issuers (a pilot's, a test's).", subcommands: [Add.self, List.self, Remove.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Trust an issuer's cards at one campus, with the keys of its JWKS. Audited.",
                discussion: """
                    ISS is the issuer's URL exactly as its cards name it in iss (its keys are at ISS/.well-known/jwks.json). \
                    --crl adds a revocation list ({"kid", "method": "rid", "rids": [...]}), once per key that has one. \
                    Adding the same ISS again replaces its keys and lists.
                    """)
            @Argument(help: "The campus slug.") var campus: String
            @Argument(help: "The issuer's iss.") var iss: String
            @Option(help: "The issuer's JWKS file.") var jwksFile: String
            @Option(help: "A name members and health officers see (default: the iss).") var name: String?
            @Option(help: "A revocation list file (repeatable).") var crl: [String] = []
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws {
                guard let jwks = try? JSONValue(parsing: Array(try readTextFile(jwksFile, "the path of the issuer's JWKS"))) else {
                    throw CLIError("\(jwksFile) is not JSON: give the issuer's JWKS ({\"keys\": [...]})")
                }
                let lists = try crl.map { path -> JSONValue in
                    guard let list = try? JSONValue(parsing: Array(try readTextFile(path, "the path of a revocation list"))),
                        list["rids"] != nil
                    else {
                        throw CLIError("\(path) is not a revocation list: JSON with kid, method \"rid\" and rids")
                    }
                    return list
                }
                let (keys, privateDropped) = try await TenantContext.run(database: database, logging: logging) { context in
                    let found = try await context.campuses.require(slug: campus)
                    do {
                        return try await HealthRecords(client: context.client).addIssuer(
                            campus: found, iss: iss, name: name ?? iss, jwks: jwks, crls: lists, actor: TenantContext.actor)
                    } catch let refused as SmartHealthCards.Refused { throw CLIError("\(jwksFile): \(refused.detail)") }
                }
                say("\(campus) trusts \(iss) with \(keys) key\(keys == 1 ? "" : "s").")
                if privateDropped {
                    FileHandle.standardError.write(
                        Data(
                            ("\(jwksFile) holds the issuer's private keys: only their public halves were stored. "
                                + "Keep that file secret (or destroy it), and give the public JWKS (ISS/.well-known/jwks.json) next time.\n")
                                .utf8))
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "The issuers a campus trusts of its own, with their keys and the members with doses from their cards.")
            @Argument(help: "The campus slug.") var campus: String
            @Flag(help: "Print the issuers as JSON.") var json = false
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws {
                let (issuers, directory) = try await TenantContext.run(database: database, logging: logging) { context in
                    let found = try await context.campuses.require(slug: campus)
                    let records = HealthRecords(client: context.client)
                    return (try await records.ownIssuers(campus: found), try await records.directoryIssuers(campus: found))
                }
                if json { return printJSON(issuers) }
                let everyCampus =
                    directory == 0
                    ? "no VCI Directory is imported (`attest shc directory import`)"
                    : "the VCI Directory's \(directory) issuers are trusted by every campus"
                guard !issuers.isEmpty else {
                    return say("\(campus) trusts no issuers of its own (`attest shc issuer add` adds one); \(everyCampus).")
                }
                for issuer in issuers {
                    let name = issuer.name == issuer.iss ? "" : " (\(issuer.name))"
                    say(
                        "\(issuer.iss)\(name): \(issuer.keys) key\(issuer.keys == 1 ? "" : "s"), "
                            + "\(issuer.revocationLists) revocation list\(issuer.revocationLists == 1 ? "" : "s"), "
                            + "added \(issuer.addedAt.formatted(.iso8601)); doses kept for \(issuer.members) member\(issuer.members == 1 ? "" : "s")"
                    )
                }
                say("Besides these, \(everyCampus).")
            }
        }

        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Stop trusting an issuer a campus added (its cards are refused from now on). Audited.",
                discussion: """
                    The doses already verified with the issuer's cards stay on members' records (they were verified \
                    when presented) unless --forget-doses: then they are deleted and those members' statuses recomputed \
                    at once, as when the issuer's signing key was stolen. An issuer of the VCI Directory is trusted by \
                    every campus and is not removed here.
                    """)
            @Argument(help: "The campus slug.") var campus: String
            @Argument(help: "The issuer's iss, as `attest shc issuer list` shows it.") var iss: String
            @Flag(help: "Also delete the doses verified with its cards (their members present another card).") var forgetDoses = false
            @OptionGroup var database: DatabaseOptions
            @OptionGroup var logging: LoggingOptions

            func run() async throws {
                let members = try await TenantContext.run(database: database, logging: logging) { context in
                    let found = try await context.campuses.require(slug: campus)
                    return try await HealthRecords(client: context.client).removeIssuer(
                        campus: found, iss: iss, forgettingDoses: forgetDoses, actor: TenantContext.actor)
                }
                guard let members else {
                    throw CLIError(
                        "\(campus) does not trust \(iss) of its own: `attest shc issuer list \(campus)` shows the issuers it added")
                }
                let whom = "\(members) member\(members == 1 ? "" : "s")"
                let kept =
                    members == 0
                    ? "no member has doses from its cards"
                    : forgetDoses
                        ? "the doses of \(whom) from its cards are deleted and their statuses recomputed"
                        : "the doses already kept for \(whom) from its cards stay (--forget-doses deletes them)"
                say("\(campus) no longer trusts \(iss): its cards are refused from now on; \(kept).")
            }
        }
    }
}

private func read(_ path: String, _ what: String) throws -> Data { try readFile(path, "the path of " + what) }

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
            abstract: "A campus's own trusted issuers (a pilot's, a test's).", subcommands: [Add.self])

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
                guard let jwks = try? JSONValue(parsing: Array(try read(jwksFile, "the issuer's JWKS"))) else {
                    throw CLIError("\(jwksFile) is not JSON: give the issuer's JWKS ({\"keys\": [...]})")
                }
                let lists = try crl.map { path -> JSONValue in
                    guard let list = try? JSONValue(parsing: Array(try read(path, "a revocation list"))), list["rids"] != nil else {
                        throw CLIError("\(path) is not a revocation list: JSON with kid, method \"rid\" and rids")
                    }
                    return list
                }
                let keys = try await TenantContext.run(database: database, logging: logging) { context in
                    let found = try await context.campuses.require(slug: campus)
                    do {
                        return try await HealthRecords(client: context.client).addIssuer(
                            campus: found, iss: iss, name: name ?? iss, jwks: jwks, crls: lists, actor: TenantContext.actor)
                    } catch let refused as SmartHealthCards.Refused { throw CLIError("\(jwksFile): \(refused.detail)") }
                }
                say("\(campus) trusts \(iss) with \(keys) key\(keys == 1 ? "" : "s").")
            }
        }
    }
}

private func read(_ path: String, _ what: String) throws -> Data { try readFile(path, "the path of " + what) }

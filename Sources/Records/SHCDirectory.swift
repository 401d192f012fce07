import AttestFoundation
import AttestPlugins
import AttestPostgres
import Crypto
import Foundation
import X509

/// The VCI Directory's daily snapshot (`vci_snapshot.json`): the issuers of SMART Health
/// Cards the Vaccination Credential Initiative trusts, with their keys and revocation lists,
/// signed by the directory (`vci_snapshot.sig`, ECDSA over SHA-512 of the file's bytes, DER)
/// with the key of its certificate (`vci_snapshot.crt`). Shared by every campus.
public enum SHCDirectory {
    public struct Entry: Sendable {
        public var iss: String
        public var canonical: String?
        public var name: String
        /// `{"keys": [...]}`, the issuer's ES256 keys.
        public var jwks: JSONValue
        public var crls: [JSONValue]
        public var keyCount: Int

        public init(iss: String, canonical: String?, name: String, jwks: JSONValue, crls: [JSONValue], keyCount: Int) {
            (self.iss, self.canonical, self.name, self.jwks, self.crls, self.keyCount) = (iss, canonical, name, jwks, crls, keyCount)
        }
    }

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Checks `signature` over `snapshot` with the public key of `certificate` (PEM or DER),
    /// which must be valid at `now`. The directory's certificate holds a P-521 key (its
    /// README says P-256, the certificate says otherwise); P-256, P-384 and P-521 keys are all
    /// read, and the digest is SHA-512 for each.
    public static func verify(snapshot: Data, signature: Data, certificate: Data, now: Date) throws(Invalid) {
        let parsed: Certificate
        do {
            if let pem = String(data: certificate, encoding: .utf8), pem.contains("-----BEGIN CERTIFICATE-----") {
                parsed = try Certificate(pemEncoded: pem)
            } else {
                parsed = try Certificate(derEncoded: Array(certificate))
            }
        } catch { throw Invalid("the certificate is not an X.509 certificate in PEM or DER") }
        guard parsed.notValidBefore <= now, now <= parsed.notValidAfter else {
            throw Invalid("the certificate is not valid now: it is valid from \(parsed.notValidBefore) to \(parsed.notValidAfter)")
        }
        let digest = SHA512.hash(data: snapshot)
        let valid: Bool
        if let key = P521.Signing.PublicKey(parsed.publicKey) {
            valid = (try? P521.Signing.ECDSASignature(derRepresentation: signature)).map { key.isValidSignature($0, for: digest) } ?? false
        } else if let key = P384.Signing.PublicKey(parsed.publicKey) {
            valid = (try? P384.Signing.ECDSASignature(derRepresentation: signature)).map { key.isValidSignature($0, for: digest) } ?? false
        } else if let key = P256.Signing.PublicKey(parsed.publicKey) {
            valid = (try? P256.Signing.ECDSASignature(derRepresentation: signature)).map { key.isValidSignature($0, for: digest) } ?? false
        } else {
            throw Invalid("the certificate's key is not an ECDSA key on P-256, P-384 or P-521")
        }
        guard valid else {
            throw Invalid(
                "the signature does not verify with the certificate's key: the snapshot, the signature or the certificate is not the directory's"
            )
        }
    }

    /// The snapshot's issuers (`issuerInfo[]`: `issuer.iss`, `issuer.name`, optional
    /// `issuer.canonical_iss`, `keys`, optional `crls`); an issuer without an ES256 key is
    /// skipped.
    public static func entries(snapshot: Data) throws(Invalid) -> [Entry] {
        guard let json = try? JSONValue(parsing: Array(snapshot)), case .array(let infos)? = json["issuerInfo"] else {
            throw Invalid("the snapshot is not the VCI Directory's JSON: it has no issuerInfo list")
        }
        var entries: [String: Entry] = [:]
        for info in infos {
            guard case .string(let iss)? = info["issuer"]?["iss"], !iss.isEmpty, iss.utf8.count <= 500,
                let keys = try? TrustedIssuer.keys(jwks: .object(["keys": info["keys"] ?? .null]))
            else { continue }
            var name = iss
            if case .string(let text)? = info["issuer"]?["name"], !text.isEmpty { name = String(text.prefix(300)) }
            var canonical: String?
            if case .string(let text)? = info["issuer"]?["canonical_iss"], !text.isEmpty, text.utf8.count <= 500 { canonical = text }
            var crls: [JSONValue] = []
            if case .array(let lists)? = info["crls"] { crls = lists }
            entries[iss] = Entry(
                iss: iss, canonical: canonical, name: name, jwks: .object(["keys": TrustedIssuer.publicKeys(of: info).keys]), crls: crls,
                keyCount: keys.count)
        }
        return entries.values.sorted { $0.iss < $1.iss }
    }

    /// Replaces the directory's issuers with `entries`, in one transaction (run as the
    /// database's owner: the servers may only read them).
    public static func replace(_ entries: [Entry], client: PostgresClient) async throws {
        let encoder = JSONEncoder()
        let jwks = try entries.map { String(decoding: try encoder.encode($0.jwks), as: UTF8.self) }
        let crls = try entries.map { String(decoding: try encoder.encode(JSONValue.array($0.crls)), as: UTF8.self) }
        try await client.withTransaction { connection in
            try await connection.query("DELETE FROM shc_directory")
            try await connection.query(
                """
                INSERT INTO shc_directory (iss, canonical_iss, name, jwks, crls)
                SELECT e.iss, NULLIF(e.canonical, ''), e.name, e.jwks::jsonb, e.crls::jsonb
                FROM unnest(\(entries.map(\.iss)), \(entries.map { $0.canonical ?? "" }), \(entries.map(\.name)), \(jwks), \(crls))
                     AS e(iss, canonical, name, jwks, crls)
                """)
        }
    }
}

import AttestPlugins
import Crypto
import Foundation
import Testing

@testable import Surveys
@testable import Tenancy

@Suite("Sealed badge keys")
struct KeyEncryptionTests {
    @Test func aSealedSecretOpensOnlyWithItsKeyAndContext() throws {
        let kek = KeyEncryptionKey.generate().key, other = KeyEncryptionKey.generate().key
        let secret = Data((0..<32).map { UInt8($0) })
        let sealed = try SealedSecret.seal(secret, under: kek, context: "attest badge key campus-a k1")
        #expect(sealed.count == 1 + 8 + 60 + 60)
        #expect(sealed.range(of: secret) == nil)  // the secret is nowhere in the clear
        #expect(SealedSecret.kekID(of: sealed) == kek.id)
        #expect(try SealedSecret.open(sealed, with: kek, context: "attest badge key campus-a k1") == secret)
        #expect(throws: CampusError.otherKeyEncryptionKey(sealedWith: kek.id, given: other.id)) {
            try SealedSecret.open(sealed, with: other, context: "attest badge key campus-a k1")
        }
        // Copied to another campus's row, it does not open.
        #expect(throws: CampusError.sealedSecretDamaged) { try SealedSecret.open(sealed, with: kek, context: "attest badge key campus-b k1") }
        for index in [9, 40, 80, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: CampusError.sealedSecretDamaged, "byte \(index)") {
                try SealedSecret.open(altered, with: kek, context: "attest badge key campus-a k1")
            }
        }
        #expect(throws: CampusError.sealedSecretDamaged) { try SealedSecret.open(Data([1, 2, 3]), with: kek, context: "x") }
    }

    @Test func rewrappingChangesOnlyTheDataKeysSeal() throws {
        let old = KeyEncryptionKey.generate().key, new = KeyEncryptionKey.generate().key
        let secret = Data("thirty-two bytes of badge secret".utf8)
        let sealed = try SealedSecret.seal(secret, under: old, context: "c")
        let rewrapped = try SealedSecret.rewrap(sealed, from: old, to: new, context: "c")
        #expect(try SealedSecret.open(rewrapped, with: new, context: "c") == secret)
        #expect(throws: CampusError.self) { try SealedSecret.open(rewrapped, with: old, context: "c") }
        #expect(rewrapped.suffix(60) == sealed.suffix(60))  // the secret's own ciphertext is untouched
        #expect(throws: CampusError.otherKeyEncryptionKey(sealedWith: new.id, given: old.id)) {
            try SealedSecret.rewrap(rewrapped, from: old, to: new, context: "c")
        }
    }

    @Test func keysAreReadFromTheirTextFormOnly() {
        let (key, text) = KeyEncryptionKey.generate()
        #expect(KeyEncryptionKey(text: "  \(text)\n")?.id == key.id)
        #expect(key.id.count == 16)
        for bad in ["", "not base64!", Data(count: 16).base64EncodedString(), Data(count: 33).base64EncodedString()] {
            #expect(KeyEncryptionKey(text: bad) == nil, "\(bad)")
        }
    }

    @Test func aBadgeSubjectChangesEveryDayAndNamesNoOne() {
        let key = SymmetricKey(size: .bits256)
        let ana = UUID(), bo = UUID()
        let monday = LocalDate(year: 2026, month: 11, day: 23), tuesday = LocalDate(year: 2026, month: 11, day: 24)
        let first = BadgeKeyStore.subject(pseudonym: ana, date: monday, key: key)
        #expect(first == BadgeKeyStore.subject(pseudonym: ana, date: monday, key: key))
        #expect(first != BadgeKeyStore.subject(pseudonym: ana, date: tuesday, key: key))
        #expect(first != BadgeKeyStore.subject(pseudonym: bo, date: monday, key: key))
        #expect(first != BadgeKeyStore.subject(pseudonym: ana, date: monday, key: SymmetricKey(size: .bits256)))
        #expect(first.count == 22 && !first.contains(ana.uuidString.lowercased().prefix(8)))
    }
}

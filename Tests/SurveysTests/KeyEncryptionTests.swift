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
        #expect(throws: CampusError.sealedSecretDamaged) {
            try SealedSecret.open(sealed, with: kek, context: "attest badge key campus-b k1")
        }
        for index in [9, 40, 80, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: CampusError.sealedSecretDamaged, "byte \(index)") {
                try SealedSecret.open(altered, with: kek, context: "attest badge key campus-a k1")
            }
        }
        #expect(throws: CampusError.sealedSecretDamaged) { try SealedSecret.open(Data([1, 2, 3]), with: kek, context: "x") }
    }

    /// During a rotation a server seals with the new key and opens with either.
    @Test func aKeyAcceptingThePreviousOneOpensBothAndSealsWithItself() throws {
        let old = KeyEncryptionKey.generate().key, new = KeyEncryptionKey.generate().key, third = KeyEncryptionKey.generate().key
        let ring = new.accepting([old])
        #expect(ring.ids == [new.id, old.id])
        #expect(new.accepting([new, old]).ids == [new.id, old.id])
        let underOld = try SealedSecret.seal(Data("a".utf8), under: old, context: "c")
        #expect(try SealedSecret.open(underOld, with: ring, context: "c") == Data("a".utf8))
        #expect(SealedSecret.kekID(of: try SealedSecret.seal(Data("b".utf8), under: ring, context: "c")) == new.id)
        #expect(throws: CampusError.otherKeyEncryptionKey(sealedWith: old.id, given: new.id)) {
            try SealedSecret.open(underOld, with: new, context: "c")
        }
        #expect(throws: CampusError.self) {
            try SealedSecret.open(try SealedSecret.seal(Data(), under: third, context: "c"), with: ring, context: "c")
        }
        // Re-wrapping from the ring: whichever of its keys sealed a value opens it.
        let rewrapped = try SealedSecret.rewrap(underOld, from: third.accepting([old]), to: new, context: "c")
        #expect(SealedSecret.kekID(of: rewrapped) == new.id)
        #expect(try SealedSecret.open(rewrapped, with: new, context: "c") == Data("a".utf8))
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

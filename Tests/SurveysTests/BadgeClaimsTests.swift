import Foundation
import Testing

@testable import Surveys

@Suite("Badge claims")
struct BadgeClaimsTests {
    @Test func claimsAreCompactJSONWithSortedKeysThatDecodeBack() throws {
        let claims = BadgeClaims(
            campus: "north", sub: "5f0c\"\\\u{1}é", date: "2026-11-22", color: "green", iat: 1_795_000_000, exp: 1_795_050_000)
        #expect(
            claims.json
                == #"{"campus":"north","color":"green","date":"2026-11-22","exp":1795050000,"iat":1795000000,"sub":"5f0c\"\\\u0001é"}"#)
        #expect(BadgeClaims(verifiedJSON: Data(claims.json.utf8)) == claims)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let plain = BadgeClaims(campus: "north", sub: UUID().uuidString.lowercased(), date: "2026-11-22", color: "red", iat: 1, exp: 2)
        #expect(plain.json == String(decoding: try encoder.encode(plain), as: UTF8.self))
    }
}

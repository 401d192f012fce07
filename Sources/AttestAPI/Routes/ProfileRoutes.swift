import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Journal
import Tenancy

/// `GET, PUT /v1/campuses/{campus}/me/profile` (`{"birthYear", "heightCm", "weightKg"}`, each
/// optional or null): the member's private health profile, metric, sealed like the journal.
/// Only its member reads it: no role has a route to another's.
struct ProfileRoutes: Sendable {
    let services: AttestServices

    struct Body: ResponseEncodable {
        var profile: HealthProfile

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(profile.birthYear, forKey: .birthYear)
            try container.encode(profile.heightCm, forKey: .heightCm)
            try container.encode(profile.weightKg, forKey: .weightKg)
            try container.encode(profile.bmi.map { ($0 * 10).rounded() / 10 }, forKey: .bmi)
        }

        enum CodingKeys: String, CodingKey { case birthYear, heightCm, weightKg, bmi }
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("me/profile") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            let profile = try await services.profiles.profile(campus: campus.id, user: user)
            return try JournalRoutes.private(Body(profile: profile), request, context)
        }
        signedIn.put("me/profile") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            var reader = ObjectReader(try await request.jsonObject(context: context), fields: ["birthYear", "heightCm", "weightKg"])
            func read<Value>(_ name: String, _ wrong: String, _ take: (JSONValue) -> Value?) -> Value? {
                reader.value(name, wrong: wrong) { $0 == .null ? .some(nil) : take($0).map { .some($0) } } ?? nil
            }
            let thisYear = campus.localDate(at: services.clock()).year
            let birthYear: Int? = read("birthYear", "must be a year from 1900 to \(thisYear), or null") {
                $0.wholeNumber(in: 1900...thisYear)
            }
            let heightCm: Double? = read("heightCm", "must be a height in centimetres from 40 to 272, or null") { value in
                guard case .number(let number) = value else { return nil }
                return number
            }
            let weightKg: Double? = read("weightKg", "must be a weight in kilograms from 2 to 650, or null") { value in
                guard case .number(let number) = value else { return nil }
                return number
            }
            reader.add(HealthProfile.problems(birthYear: birthYear, heightCm: heightCm, weightKg: weightKg, thisYear: thisYear))
            try reader.finish()
            let profile = HealthProfile(birthYear: birthYear, heightCm: heightCm, weightKg: weightKg).rounded
            try await services.profiles.set(campus: campus.id, user: user, profile: profile, now: services.clock())
            return try JournalRoutes.private(Body(profile: profile), request, context)
        }
    }
}

import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Notifications
import Tenancy

/// `GET, PUT /v1/campuses/{campus}/me/notifications`: how the member wants to be reached:
/// `{"email", "push", "reminderTime": "HH:MM" | null, "quietHours": {"from", "to"} | null,
/// "language": "en" | "es" | null}` (null: the campus's). A PUT replaces the whole choice; an
/// absent member is its default.
struct NotificationRoutes: Sendable {
    let services: AttestServices

    struct Body: ResponseEncodable {
        var preferences: NotificationPreferences
        var campus: Campus

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(preferences.email, forKey: .email)
            try container.encode(preferences.push, forKey: .push)
            try container.encode(preferences.reminderMinute.map(CampusFormats.clock(fromMinute:)), forKey: .reminderTime)
            try container.encode(
                preferences.quietHours.map {
                    ["from": CampusFormats.clock(fromMinute: $0.from), "to": CampusFormats.clock(fromMinute: $0.to)]
                },
                forKey: .quietHours)
            try container.encode(preferences.language, forKey: .language)
            try container.encode(CampusFormats.clock(fromMinute: campus.reminderMinute), forKey: .campusReminderTime)
            let window = NotificationPreferences.window(campus)
            try container.encode(
                ["from": CampusFormats.clock(fromMinute: window.lowerBound), "to": CampusFormats.clock(fromMinute: window.upperBound)],
                forKey: .reminderWindow)
        }

        enum CodingKeys: String, CodingKey { case email, push, reminderTime, quietHours, language, campusReminderTime, reminderWindow }
    }

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        let store = NotificationPreferenceStore(client: services.database)
        signedIn.get("me/notifications") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            let query = QueryParameters(request, accepting: [])
            guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
            return try JournalRoutes.private(
                Body(preferences: try await store.preferences(campus: campus.id, user: user), campus: campus), request, context)
        }
        signedIn.put("me/notifications") { request, context -> Response in
            let (campus, user) = try JournalRoutes.member(context)
            var reader = ObjectReader(
                try await request.jsonObject(context: context), fields: ["email", "push", "reminderTime", "quietHours", "language"])
            func flag(_ name: String, _ fallback: Bool) -> Bool {
                reader.value(name, wrong: "must be true or false") { value -> Bool? in
                    if case .bool(let flag) = value { return flag }
                    return nil
                } ?? fallback
            }
            let email = flag("email", true), push = flag("push", false)
            let reminder: Int?? = reader.value("reminderTime", wrong: "must be a local time HH:MM, or null for the campus's") { value in
                switch value {
                case .null: return .some(nil)
                case .string(let text): return CampusFormats.minute(fromClock: text).map { .some($0) }
                default: return nil
                }
            }
            let quiet: (from: Int, to: Int)?? = reader.value(
                "quietHours", wrong: "must be {\"from\": \"HH:MM\", \"to\": \"HH:MM\"}, such as 22:00 to 07:00, or null"
            ) { value in
                if value == .null { return .some(nil) }
                guard case .string(let from)? = value["from"], case .string(let to)? = value["to"],
                    let start = CampusFormats.minute(fromClock: from), let end = CampusFormats.minute(fromClock: to),
                    case .object(let members) = value, members.count == 2
                else { return nil }
                return .some((start, end))
            }
            let language: String?? = reader.value("language", wrong: "must be en or es, or null for the campus's") { value in
                switch value {
                case .null: return .some(nil)
                case .string(let code): return .some(code)
                default: return nil
                }
            }
            let preferences = NotificationPreferences(
                email: email, push: push, reminderMinute: reminder ?? nil, quietHours: quiet ?? nil, language: language ?? nil)
            reader.add(
                NotificationPreferences.problems(
                    reminderMinute: preferences.reminderMinute, quietHours: preferences.quietHours, language: preferences.language,
                    campus: campus))
            try reader.finish()
            try await store.set(campus: campus, user: user, preferences, now: services.clock())
            // The campus's reminders wake now and find the member's new time.
            try await CampusSchedule(client: services.database).bringForward(.reminders, campus: campus.id, to: services.clock())
            return try JournalRoutes.private(Body(preferences: preferences, campus: campus), request, context)
        }
    }
}

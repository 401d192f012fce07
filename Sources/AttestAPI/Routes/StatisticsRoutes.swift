import AttestFoundation
import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Surveys
import Tenancy

/// Statistics from the daily rollups: `GET …/stats` for members (shares, small counts
/// suppressed), `GET …/admin/dashboard` for admins (counts), and the identifiable
/// `GET …/admin/follow-ups` for health officers (audited).
struct StatisticsRoutes: Sendable {
    let services: AttestServices

    struct ColorShares: Codable, Sendable {
        var green: Double?
        var yellow: Double?
        var red: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(green, forKey: .green)  // null, not absent, when suppressed
            try container.encode(yellow, forKey: .yellow)
            try container.encode(red, forKey: .red)
        }
    }

    struct StatsDay: Codable, Sendable {
        var date: String
        var suppressed: Bool
        var submitted: Int?
        /// Percent of the day's attestations per colour.
        var colors: ColorShares
        /// Percent of the day's attestations reporting each symptom.
        var symptoms: [String: Double?]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(date, forKey: .date)
            try container.encode(suppressed, forKey: .suppressed)
            try container.encode(submitted, forKey: .submitted)
            try container.encode(colors, forKey: .colors)
            try container.encode(symptoms, forKey: .symptoms)
        }
    }

    struct StatsBody: ResponseEncodable {
        var from: String
        var to: String
        var minCount: Int
        var days: [StatsDay]
    }

    struct Counts: Codable, Sendable {
        var green: Int
        var yellow: Int
        var red: Int
    }

    struct DashboardFigures: Codable, Sendable {
        var date: String?
        var activeMembers: Int
        var submitted: Int
        var onTime: Int
        var late: Int
        var missing: Int
        var colors: Counts
        var symptoms: [String: Int]
        var answers: [String: [String: Int]]
        var complianceRate: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(date, forKey: .date)
            try container.encode(activeMembers, forKey: .activeMembers)
            try container.encode(submitted, forKey: .submitted)
            try container.encode(onTime, forKey: .onTime)
            try container.encode(late, forKey: .late)
            try container.encode(missing, forKey: .missing)
            try container.encode(colors, forKey: .colors)
            try container.encode(symptoms, forKey: .symptoms)
            try container.encode(answers, forKey: .answers)
            try container.encode(complianceRate, forKey: .complianceRate)
        }

        /// The JSON `encode(to:)` gives (dictionaries' keys sorted), written directly.
        func append(to json: inout JSONBytes) {
            json.literal("{")
            if let date {
                json.literal(#""date":"#)
                json.string(date)
                json.literal(",")
            }
            json.literal(#""activeMembers":"#)
            json.integer(activeMembers)
            json.literal(#","submitted":"#)
            json.integer(submitted)
            json.literal(#","onTime":"#)
            json.integer(onTime)
            json.literal(#","late":"#)
            json.integer(late)
            json.literal(#","missing":"#)
            json.integer(missing)
            json.literal(#","colors":{"green":"#)
            json.integer(colors.green)
            json.literal(#","yellow":"#)
            json.integer(colors.yellow)
            json.literal(#","red":"#)
            json.integer(colors.red)
            json.literal(#"},"symptoms":"#)
            Self.append(symptoms, to: &json) { $1.integer($0) }
            json.literal(#","answers":"#)
            Self.append(answers, to: &json) { counts, json in Self.append(counts, to: &json) { $1.integer($0) } }
            json.literal(#","complianceRate":"#)
            if let complianceRate { json.number(complianceRate) } else { json.literal("null") }
            json.literal("}")
        }

        private static func append<Value>(_ object: [String: Value], to json: inout JSONBytes, value: (Value, inout JSONBytes) -> Void) {
            json.literal("{")
            for (index, member) in object.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { json.literal(",") }
                json.string(member.key)
                json.literal(":")
                value(member.value, &json)
            }
            json.literal("}")
        }
    }

    struct DashboardBody: ResponseEncodable {
        var from: String
        var to: String
        var days: [DashboardFigures]
        var total: DashboardFigures

        /// The JSON `encode(to:)` gives, written directly: `JSONEncoder` took about a third of
        /// a 30-day dashboard's time in the server, which under load is what a busy admin waits for.
        var json: JSONBytes { Self.json(from: from, to: to, written: WrittenDays(), days: days, total: total) }

        /// The body with `written`'s days before `days`.
        static func json(from: String, to: String, written: WrittenDays, days: [DashboardFigures], total: DashboardFigures) -> JSONBytes {
            var json = JSONBytes(capacity: written.json.bytes.count + 1_024 * (days.count + 1))
            json.literal(#"{"from":"#)
            json.string(from)
            json.literal(#","to":"#)
            json.string(to)
            json.literal(#","days":["#)
            json.append(written.json)
            for (index, day) in days.enumerated() {
                if index > 0 || !written.json.isEmpty { json.literal(",") }
                day.append(to: &json)
            }
            json.literal(#"],"total":"#)
            total.append(to: &json)
            json.literal("}")
            return json
        }

        static func response(_ json: JSONBytes) -> Response {
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: json.bytes)))
        }
    }

    /// A dashboard's settled days written out (their objects, comma-separated) with their
    /// totals. A settled day's figures no longer change, so a server writes them once and
    /// keeps them as long as the figures themselves (`StatisticsStore.keptFor` from the
    /// oldest one's read): an admin's dashboard, asked for again, writes only its open days.
    struct WrittenDays: Sendable {
        var json = JSONBytes(capacity: 0)
        var totals = RangeTotals([])
    }

    struct WrittenKey: Hashable, Sendable {
        var campus: CampusID
        var from: LocalDate
        var to: LocalDate
        /// The symptom questions the days were written for (a new survey may name others).
        var symptoms: [String]
    }

    /// Kept per campus, range and symptoms. A 30-day range writes about 19 KB, a year's about
    /// 230 KB: at most 64 are kept (15 MB if every one were a year's).
    let written = ExpiringCache<WrittenKey, WrittenDays>(ttl: StatisticsStore.keptFor, limit: 64)

    struct FollowUpItem: Codable, Sendable {
        var userId: String
        var name: String
        var email: String
        var color: String
        var reason: String
        var submittedAt: String
        var onTime: Bool
    }

    struct FollowUpsBody: ResponseEncodable {
        var date: String
        var colors: [String]
        var items: [FollowUpItem]
        /// Pass as `cursor` for the next page; null on the last page.
        var nextCursor: String?

        enum CodingKeys: String, CodingKey { case date, colors, items, nextCursor }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(date, forKey: .date)
            try container.encode(colors, forKey: .colors)
            try container.encode(items, forKey: .items)
            try container.encode(nextCursor, forKey: .nextCursor)  // null, not absent, on the last page
        }
    }

    /// One door's counts in an hour, or in the whole range: valid badges by colour (members'
    /// and guests' apart, every colour named), refused ones by reason (those that occurred).
    struct DoorFigures: Codable, Sendable {
        var hour: String?
        var members: [String: Int]
        var guests: [String: Int]
        var refused: [String: Int]
        var count: Int

        init(hour: String?, members: [String: Int], guests: [String: Int], refused: [String: Int]) {
            let colors = Dictionary(uniqueKeysWithValues: BadgeColor.allCases.map { ($0.rawValue, 0) })
            self.hour = hour
            self.members = colors.merging(members, uniquingKeysWith: +)
            self.guests = colors.merging(guests, uniquingKeysWith: +)
            self.refused = refused
            self.count = members.values.reduce(0, +) + guests.values.reduce(0, +) + refused.values.reduce(0, +)
        }
    }

    struct DoorItem: Codable, Sendable {
        var door: String
        var total: DoorFigures
        var hours: [DoorFigures]
    }

    struct DoorsBody: ResponseEncodable {
        var from: String
        var to: String
        var doors: [DoorItem]
    }

    /// The campus's door counts of a range, per door: its total and its hours.
    static func doorsBody(_ hours: [DoorCounts.Hour], range: DateRange, campus: Campus) -> DoorsBody {
        func sum(_ hours: [DoorCounts.Hour], _ part: KeyPath<DoorCounts.Hour, [String: Int]>) -> [String: Int] {
            var total: [String: Int] = [:]
            for hour in hours { total.merge(hour[keyPath: part], uniquingKeysWith: +) }
            return total
        }
        var doors: [DoorItem] = []
        for (door, hours) in Dictionary(grouping: hours, by: \.door).sorted(by: { $0.key < $1.key }) {
            let total = DoorFigures(hour: nil, members: sum(hours, \.members), guests: sum(hours, \.guests), refused: sum(hours, \.refused))
            let each = hours.map { hour in
                DoorFigures(
                    hour: DoorCounts.hourText(hour.hour, campus: campus), members: hour.members, guests: hour.guests,
                    refused: hour.refused)
            }
            doors.append(DoorItem(door: door, total: total, hours: each))
        }
        return DoorsBody(from: range.from.description, to: range.to.description, doors: doors)
    }

    /// Follow-ups per page when the request names no `limit`, and the most it may name.
    static let followUpPage = (default: 500, most: 1_000)

    func register(campus: RouterGroup<AttestRequestContext>, signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("stats") { request, context -> StatsBody in
            try await stats(request, context)
        }
        campus.group("admin/dashboard").add(middleware: AuthenticationMiddleware(services: services, roles: [.admin]))
            .get { request, context -> Response in
                try await dashboard(request, context)
            }
        campus.group("admin/doors").add(middleware: AuthenticationMiddleware(services: services, roles: [.admin]))
            .get { request, context -> DoorsBody in
                let campus = try context.requireCampus()
                let range = try range(request)
                do throws(SurveysError) { try DoorCounts.checkHourly(range) } catch { throw Problem(error) }
                return Self.doorsBody(try await services.doorCounts.hours(campus: campus, range: range), range: range, campus: campus)
            }
        campus.group("admin/follow-ups").add(middleware: AuthenticationMiddleware(services: services, roles: [.healthOfficer]))
            .get { request, context -> Response in
                try await followUps(request, context)
            }
    }

    private func range(_ request: Request) throws -> DateRange {
        let query = QueryParameters(request, accepting: ["from", "to"])
        let range: DateRange
        do {
            range = try DateRange.parse(from: query["from"], to: query["to"])
        } catch .invalidRange(let problems) {
            throw Problem.validation(query.problems + problems.map { .init(field: $0.field, message: $0.message) })
        } catch {
            throw Problem(error)
        }
        guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
        return range
    }

    private func stats(_ request: Request, _ context: AttestRequestContext) async throws -> StatsBody {
        let campus = try context.requireCampus()
        let range = try range(request)
        let days = try await services.statisticsService.memberDays(campus: campus, range: range)
        return StatsBody(
            from: range.from.description, to: range.to.description, minCount: campus.statsMinCount,
            days: days.map { day in
                StatsDay(
                    date: day.date.description, suppressed: day.suppressed, submitted: day.submitted,
                    colors: ColorShares(green: day.green, yellow: day.yellow, red: day.red),
                    symptoms: Dictionary(uniqueKeysWithValues: day.symptoms.map { ($0.id, $0.percent) }))
            })
    }

    private func dashboard(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let campus = try context.requireCampus()
        let range = try range(request)
        let (kept, symptoms) = try await services.statisticsService.keptDashboard(campus: campus.id, range: range)
        func figures(_ day: DayFigures) -> DashboardFigures {
            DashboardFigures(
                date: day.date.description, activeMembers: day.active, submitted: day.submitted, onTime: day.onTime,
                late: day.late, missing: day.missing, colors: Counts(green: day.green, yellow: day.yellow, red: day.red),
                symptoms: Self.symptomCounts(day.answers, symptoms), answers: day.answers, complianceRate: day.complianceRate)
        }
        let settled = kept.days.prefix(kept.settled), open = kept.days.dropFirst(kept.settled)
        var written = WrittenDays()
        if let first = settled.first, let last = settled.last {
            let key = WrittenKey(campus: campus.id, from: first.date, to: last.date, symptoms: symptoms)
            if let kept = self.written.value(for: key) {
                written = kept
            } else {
                for (index, day) in settled.enumerated() {
                    if index > 0 { written.json.literal(",") }
                    figures(day).append(to: &written.json)
                }
                written.totals.add(settled)
                if let since = kept.since { self.written.store(written, for: key, at: since) }
            }
        }
        var total = written.totals
        total.add(open)
        let body = DashboardBody.json(
            from: range.from.description, to: range.to.description, written: written, days: open.map(figures),
            total: DashboardFigures(
                date: nil, activeMembers: total.activeMembers, submitted: total.submitted, onTime: total.onTime, late: total.late,
                missing: total.missing, colors: Counts(green: total.green, yellow: total.yellow, red: total.red),
                symptoms: Self.symptomCounts(total.answers, symptoms), answers: total.answers, complianceRate: total.complianceRate))
        return DashboardBody.response(body)
    }

    /// How many attestations said yes to each symptom question (0 for one nobody did).
    static func symptomCounts(_ answers: [String: [String: Int]], _ symptoms: [String]) -> [String: Int] {
        Dictionary(symptoms.map { ($0, answers[$0]?["true"] ?? 0) }, uniquingKeysWith: { first, _ in first })
    }

    private func followUps(_ request: Request, _ context: AttestRequestContext) async throws -> Response {
        let campus = try context.requireCampus()
        let user = try context.requireSession().user
        let query = QueryParameters(request, accepting: ["date", "color", "limit", "cursor"])
        var problems = query.problems
        var date: LocalDate?
        if let text = query["date"] {
            date = LocalDate(text)
            if date == nil { problems.append(.init(field: "date", message: "must be a date as YYYY-MM-DD, got \"\(text.prefix(40))\"")) }
        } else {
            problems.append(.init(field: "date", message: "is required: the campus-local date as YYYY-MM-DD"))
        }
        var colors: [BadgeColor] = [.red, .yellow]
        if let text = query["color"] {
            if let color = BadgeColor(rawValue: text), color == .red || color == .yellow {
                colors = [color]
            } else {
                problems.append(.init(field: "color", message: "must be red or yellow (leave it out for both)"))
            }
        }
        let limit = query.limit(default: Self.followUpPage.default, most: Self.followUpPage.most, problems: &problems)
        var cursor: StatisticsStore.FollowUpCursor?
        if let text = query["cursor"] {
            cursor = StatisticsStore.FollowUpCursor(text)
            if cursor == nil { problems.append(QueryParameters.unknownCursor) }
        }
        guard problems.isEmpty, let date else { throw Problem.validation(problems) }
        let page = try await services.statisticsService.followUps(
            campus: campus.id, date: date, colors: colors, after: cursor, limit: limit, actor: "user:\(user.email)")
        var response = try FollowUpsBody(
            date: date.description, colors: colors.map(\.rawValue),
            items: page.items.map {
                FollowUpItem(
                    userId: $0.userId.description, name: $0.name, email: $0.email, color: $0.color.rawValue, reason: $0.reason,
                    submittedAt: $0.submittedAt.ISO8601Format(), onTime: $0.onTime)
            },
            nextCursor: page.next?.description
        ).response(from: request, context: context)
        response.headers[.cacheControl] = "no-store"
        return response
    }
}

import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Identity
import Surveys
import Tenancy

/// Door staff's page: scan with the camera, paste or upload a badge, and see the verdict.
/// The page's script checks a badge on the device against the campus's keys (so it works
/// offline once loaded) and, online, asks `POST …/scan/verify`, the same check the API's
/// `badges/verify` makes. Without script, the form posts the token and the server answers.
struct ScanPage: Sendable {
    let web: WebRoutes
    var services: AttestServices { web.services }
    static let roles: Set<Role> = [.screener, .admin]

    struct VerifyBody: ResponseEncodable {
        var valid: Bool
        var color: String?
        var date: String?
        var reason: String?
        var detail: String?
    }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("scan") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            return try page(visit: visit, verdict: nil)
        }
        pages.post("scan") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            let form = try await WebForm.read(request, context: context)
            try web.checkCSRF(request, form: form, visit: visit)
            let token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            let verdict = try await services.badges.verify(token: String(token.prefix(4_096)), campus: visit.campus, now: services.clock())
            return try page(visit: visit, verdict: verdict)
        }
        pages.post("scan/verify") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            try web.checkCSRF(request, form: nil, visit: visit)
            let token = try await BadgeHTTP.token(request, context)
            let verdict: VerifyBody
            switch try await services.badges.verify(token: token, campus: visit.campus, now: services.clock()) {
            case .valid(let claims): verdict = VerifyBody(valid: true, color: claims.color, date: claims.date)
            case .invalid(let rejection): verdict = VerifyBody(valid: false, reason: rejection.rawValue, detail: rejection.detail)
            }
            var response = try verdict.response(from: request, context: context)
            response.headers[.cacheControl] = "no-store"
            return response
        }
    }

    private func page(visit: WebVisit, verdict: BadgeVerification?) throws -> Response {
        var data: [String: Any] = ["timeZone": visit.campus.timeZone, "verdictClass": "wait", "verdictText": visit["scanReady"]]
        switch verdict {
        case .valid(let claims)?:
            let words = ["green": "colorGreen", "yellow": "colorYellow", "red": "colorRed", "gray": "colorGray"]
            data["verdictClass"] = words[claims.color] == nil ? "invalid" : claims.color
            data["verdictText"] = visit.format("verdictGenuine", visit[words[claims.color] ?? "colorGray"]) + " · " + claims.date
        case .invalid(let rejection)?:
            let keys: [BadgeRejection: String] = [
                .expired: "verdictExpired", .otherCampus: "verdictOtherCampus", .unknownKey: "verdictUnknownKey",
                .badSignature: "verdictForged",
                .malformed: "verdictMalformed",
            ]
            data["verdictClass"] = "invalid"
            data["verdictText"] = visit[keys[rejection] ?? "verdictMalformed"]
            data["verdictDetail"] = rejection.detail
        case nil: break
        }
        return try web.renderer.render(
            .init(template: "scan", title: visit["scanTitle"], data: data, scripts: ["scan.js"], current: "scan"), visit: visit)
    }
}

import AttestPlugins
import AttestServer
import Foundation
import Hummingbird
import Identity
import NIOCore
import Surveys
import Tenancy

/// Door staff's page: scan with the camera, take a photo, or paste a badge, and see the verdict.
/// The page's script checks a badge on the device against the campus's keys (so it works
/// offline once loaded) and, online, asks `POST …/scan/verify`, the same check the API's
/// `badges/verify` makes. Where the browser cannot read QR codes (no `BarcodeDetector`:
/// Safari on iPhone, Firefox, Chrome on Linux and Windows), the script sends camera frames or
/// the photo to `POST …/scan/image`, read on the server as the API's `badges/scan` reads
/// them. Without script, the form posts the pasted token or the photo and the server answers.
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
            let form = try await WebForm.read(request, context: context, limit: Self.maxPhotoBytes)
            try web.checkCSRF(request, form: form, visit: visit)
            var token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            if token.isEmpty, let photo = form.file("photo") {
                // A photo taken or chosen without script: read here, as `badges/scan` reads one.
                try services.limiters.admitScan(campus: visit.campus.id, screener: try Self.screener(visit))
                switch await BadgeImage.scan(ByteBuffer(bytes: photo.body)) {
                case .found(let text): token = text
                case .noCode: return try page(visit: visit, verdict: nil, trouble: "verdictNoCode")
                case .busy, .timedOut: return try page(visit: visit, verdict: nil, trouble: "verdictBusy")
                case .notAnImage, .unreadable, .tooManyPixels, .tooLong:
                    return try page(visit: visit, verdict: nil, trouble: "verdictNotAPhoto")
                }
            }
            let verdict = try await services.badges.verify(token: String(token.prefix(4_096)), campus: visit.campus, now: services.clock())
            return try page(visit: visit, verdict: verdict)
        }
        // A camera frame or photo from the script, where the browser cannot read QR codes.
        pages.post("scan/image") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            try web.checkCSRF(request, form: nil, visit: visit)
            let token = try await BadgeHTTP.scannedToken(request, context, services: services, screener: try Self.screener(visit))
            return try await verified(token, visit: visit, request: request, context: context)
        }
        pages.post("scan/verify") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            try web.checkCSRF(request, form: nil, visit: visit)
            return try await verified(BadgeHTTP.token(request, context), visit: visit, request: request, context: context)
        }
    }

    /// Who is scanning (the page asked for a screener's or admin's session).
    static func screener(_ visit: WebVisit) throws -> UserID {
        guard let session = visit.session else { throw WebOutcome.redirect(visit.base + "signin") }
        return session.user.id
    }

    /// The most bytes of a photo the form sends without script: a phone's camera photo, whole.
    static let maxPhotoBytes = 8 * 1024 * 1024

    private func verified(_ token: String, visit: WebVisit, request: Request, context: AttestRequestContext) async throws -> Response {
        let verdict: VerifyBody
        switch try await services.badges.verify(token: token, campus: visit.campus, now: services.clock()) {
        case .valid(let claims): verdict = VerifyBody(valid: true, color: claims.color, date: claims.date)
        case .invalid(let rejection): verdict = VerifyBody(valid: false, reason: rejection.rawValue, detail: rejection.detail)
        }
        var response = try verdict.response(from: request, context: context)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func page(visit: WebVisit, verdict: BadgeVerification?, trouble: String? = nil) throws -> Response {
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
        case nil:
            if let trouble {
                data["verdictClass"] = "invalid"
                data["verdictText"] = visit[trouble]
            }
        }
        return try web.renderer.render(
            .init(template: "scan", title: visit["scanTitle"], data: data, scripts: ["scan.js"], current: "scan"), visit: visit)
    }
}

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
        /// A guest's day pass: the host's name.
        var guest: String?
    }

    func register(on pages: RouterGroup<AttestRequestContext>) {
        pages.get("scan") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            return try page(visit: visit, verdict: nil, door: nil)
        }
        pages.post("scan") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            let form = try await WebForm.read(request, context: context, limit: Self.maxPhotoBytes)
            try web.checkCSRF(request, form: form, visit: visit)
            let screener = try Self.screener(visit)
            var token = (form["token"] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            // The door as typed, shown again with the answer; a name that is not one counts nowhere.
            let doorText = String((form["door"] ?? "").prefix(DoorName.maxLength * 4))
            let door = try? DoorName.parse(doorText)
            var scanned = false
            if token.isEmpty, let photo = form.file("photo") {
                // A photo taken or chosen without script: read here, as `badges/scan` reads one.
                try services.limiters.admitScan(campus: visit.campus.id, screener: screener)
                switch await BadgeImage.scan(ByteBuffer(bytes: photo.body)) {
                case .found(let text): (token, scanned) = (text, true)
                case .noCode: return try page(visit: visit, verdict: nil, door: doorText, trouble: "verdictNoCode")
                case .busy, .timedOut: return try page(visit: visit, verdict: nil, door: doorText, trouble: "verdictBusy")
                case .notAnImage, .unreadable, .tooManyPixels, .tooLong:
                    return try page(visit: visit, verdict: nil, door: doorText, trouble: "verdictNotAPhoto")
                }
            }
            let verdict = try await BadgeHTTP.verify(
                String(token.prefix(4_096)), campus: visit.campus, door: door, screener: screener, scanned: scanned, services: services)
            return try page(visit: visit, verdict: verdict, door: doorText)
        }
        // A camera frame or photo from the script, where the browser cannot read QR codes.
        pages.post("scan/image") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            try web.checkCSRF(request, form: nil, visit: visit)
            let screener = try Self.screener(visit)
            let door = try BadgeHTTP.door(request)
            let token = try await BadgeHTTP.scannedToken(request, context, services: services, screener: screener)
            return try await verified(token, door: door, scanned: true, visit: visit, request: request, context: context)
        }
        pages.post("scan/verify") { request, context -> Response in
            let visit = try await web.visit(request, context, roles: Self.roles)
            try web.checkCSRF(request, form: nil, visit: visit)
            let (token, door) = try await BadgeHTTP.verification(request, context)
            return try await verified(token, door: door, scanned: false, visit: visit, request: request, context: context)
        }
    }

    /// Who is scanning (the page asked for a screener's or admin's session).
    static func screener(_ visit: WebVisit) throws -> UserID {
        guard let session = visit.session else { throw WebOutcome.redirect(visit.base + "signin") }
        return session.user.id
    }

    /// The most bytes of a photo the form sends without script: a phone's camera photo, whole.
    static let maxPhotoBytes = 8 * 1024 * 1024

    private func verified(
        _ token: String, door: DoorName?, scanned: Bool, visit: WebVisit, request: Request, context: AttestRequestContext
    ) async throws -> Response {
        let verdict: VerifyBody
        let screener = try Self.screener(visit)
        switch try await BadgeHTTP.verify(token, campus: visit.campus, door: door, screener: screener, scanned: scanned, services: services)
        {
        case .valid(let claims): verdict = VerifyBody(valid: true, color: claims.color, date: claims.date, guest: claims.guest)
        case .invalid(let rejection): verdict = VerifyBody(valid: false, reason: rejection.rawValue, detail: rejection.detail)
        }
        var response = try verdict.response(from: request, context: context)
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func page(visit: WebVisit, verdict: BadgeVerification?, door: String?, trouble: String? = nil) throws -> Response {
        var data: [String: Any] = [
            "timeZone": visit.campus.timeZone, "verdictClass": "wait", "verdictText": visit["scanReady"], "door": door ?? "",
        ]
        switch verdict {
        case .valid(let claims)?:
            let words = ["green": "colorGreen", "yellow": "colorYellow", "red": "colorRed", "gray": "colorGray"]
            data["verdictClass"] = words[claims.color] == nil ? "invalid" : claims.color
            data["verdictText"] =
                visit.format("verdictGenuine", visit[words[claims.color] ?? "colorGray"]) + " · " + claims.date
                + (claims.guest.map { " · " + visit.format("guestOf", $0) } ?? "")
        case .invalid(let rejection)?:
            let keys: [BadgeRejection: String] = [
                .expired: "verdictExpired", .otherCampus: "verdictOtherCampus", .unknownKey: "verdictUnknownKey",
                .badSignature: "verdictForged",
                .malformed: "verdictMalformed",
            ]
            data["verdictClass"] = "invalid"
            data["verdictText"] = visit[keys[rejection] ?? "verdictMalformed"]
            // In the page's words (the API's `detail` is English, for software and logs).
            data["verdictDetail"] = visit["verdictWhy-" + rejection.rawValue]
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

import AttestFoundation
import AttestPlugins
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import NIOCore
import Surveys
import Tenancy

/// A badge verification's body, as the API and the scanner page send it.
package enum BadgeHTTP {
    /// A verification request's fields: `token`, and `door` when the screener named the door
    /// (the verdict is then counted there, `DoorCounts`), as the API and the scanner page send them.
    package static func verification(_ request: Request, _ context: AttestRequestContext) async throws -> (token: String, door: DoorName?) {
        var reader = ObjectReader(
            try await request.jsonObject(context: context), fields: ["token", "door"], unknown: "is not a field of a verification request")
        // Spaces and line ends around it are not the token's (a keyboard-wedge scanner ends what
        // it types with one; a token has none), as the page's form reads it.
        let token = reader.text(
            "token", required: "the badge token the member shows (a string)",
            wrong: "is required: the badge token the member shows (a string)")?.trimmingCharacters(in: .whitespacesAndNewlines)
        if token?.isEmpty == true { reader.problem("token", "is required: the badge token the member shows (a string)") }
        var door: DoorName?
        if let text = reader.text("door", wrong: "must be the door's name as text, such as \"Library east entrance\"") {
            do { door = try DoorName.parse(text) } catch { reader.problem("door", error.message) }
        }
        try reader.finish()
        guard let token else { throw Problem.validation(reader.problems) }
        return (token, door)
    }

    /// The `door` of a query string (`badges/scan?door=…`), when given; a 422 naming it when it
    /// is no door's name, or for any other parameter.
    package static func door(_ request: Request) throws -> DoorName? {
        let query = QueryParameters(request, accepting: ["door"])
        guard query.problems.isEmpty else { throw Problem.validation(query.problems) }
        guard let text = query["door"] else { return nil }
        do { return try DoorName.parse(text) } catch { throw Problem.validation([.init(field: "door", message: error.message)]) }
    }

    /// Checks `token` at `campus` and counts the verdict at `door`, when the screener named one.
    /// A scanned QR code that is no badge (`scanned`) is not counted: a camera sees other codes.
    package static func verify(
        _ token: String, campus: Campus, door: DoorName?, screener: UserID, scanned: Bool = false, services: AttestServices
    ) async throws -> BadgeVerification {
        let now = services.clock()
        let verdict = try await services.badges.verify(token: token, campus: campus, now: now)
        if let door, !(scanned && verdict == .invalid(.malformed)) {
            services.doorCounts.count(verdict, token: token, door: door, campus: campus, screener: screener, at: now)
        }
        return verdict
    }

    /// The image types `badges/scan` reads, and the most bytes of one (a phone's photo; a
    /// camera frame of 640 px is about 50 KB).
    package static let scanTypes: Set<String> = ["image/jpeg", "image/png", "image/webp"]
    package static let maxScanBytes = 2 * 1024 * 1024

    /// The text of the QR code in a `badges/scan` request's image, or the problem that says
    /// why there is none: 415 for another type, 413 past 2 MB, 422 for what is not an image,
    /// does not decode, has too many pixels or holds no QR code, 429 past the screener's
    /// allowance, 503 when the scanning threads are full.
    package static func scannedToken(
        _ request: Request, _ context: AttestRequestContext, services: AttestServices, screener: UserID
    ) async throws -> String {
        // The media type before any parameter; "" or ";" alone is no type (split gives no piece).
        let type = request.headers[.contentType].map {
            ($0.split(separator: ";").first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard let type, scanTypes.contains(type) else {
            throw Problem(
                .unsupportedMediaType, slug: "unsupported-media-type", title: "Not an image type the scanner reads",
                detail: "Send the photo or camera frame as image/jpeg, image/png or image/webp, the image's bytes as the body.")
        }
        try services.limiters.admitScan(campus: try context.requireCampus().id, screener: screener)
        let body = try await request.collectBody(context: context, limit: maxScanBytes)
        switch await BadgeImage.scan(body) {
        case .found(let text): return text
        case .noCode:
            throw Problem(
                .unprocessableContent, slug: "no-qr-code", title: "No QR code found",
                detail: "No QR code was found in the image: hold the badge's code whole and flat in the frame, closer and without glare.")
        case .notAnImage:
            throw Problem.validation([.init(field: "body", message: "is not a JPEG, PNG or WebP image: its first bytes are not one's")])
        case .unreadable:
            throw Problem.validation([
                .init(field: "body", message: "does not decode as the image it says it is: it is truncated or damaged; take it again")
            ])
        case .tooManyPixels(let width, let height):
            throw Problem.validation([
                .init(
                    field: "body",
                    message:
                        "is \(width)×\(height) pixels; at most \(BadgeImage.maxPixels / 1_000_000) megapixels for a JPEG, \(BadgeImage.maxWholePixels / 1_000_000) for a PNG or WebP, and \(BadgeImage.maxSide) on a side: send a smaller one (a frame of about 640 pixels is enough)"
                )
            ])
        case .tooLong:
            throw Problem(
                .unprocessableContent, slug: "not-a-badge", title: "Not a badge",
                detail: "The image's QR code holds far more than a badge does: it is not a member's badge.")
        case .busy, .timedOut:
            throw Problem(
                .serviceUnavailable, slug: "scanner-busy", title: "The scanner is busy",
                detail: "The server is reading other scans right now. Try again in a moment.", headers: [.retryAfter: "1"])
        }
    }
}

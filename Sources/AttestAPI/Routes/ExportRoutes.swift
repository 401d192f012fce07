import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Tenancy

/// `GET /v1/campuses/{campus}/me/export?from=&to=&format=pdf|csv|json&profile=true|false`: the
/// member's journal entries and episodes of a range, headed by their health profile when asked;
/// a PDF in the best language of `Accept-Language` it is written in. The audit log records that
/// an export happened (and its format), nothing of what it held.
struct ExportRoutes: Sendable {
    let services: AttestServices

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("me/export") { request, context -> Response in
            let (campus, _) = try JournalRoutes.member(context)
            let session = try context.requireSession()
            let query = QueryParameters(request, accepting: ["from", "to", "format", "profile"])
            let (from, to, format) = try ExportHTTP.parse(query, today: campus.localDate(at: services.clock()), defaultFormat: .pdf)
            return try await ExportHTTP.ownExport(
                services: services, campus: campus, user: session.user, from: from, to: to, format: format,
                language: StandalonePage.language(request), withProfile: try ExportHTTP.wantsProfile(query))
        }
    }
}

import AttestPlugins
import AttestPostgres
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import Journal
import Tenancy

/// `GET /v1/campuses/{campus}/me/export?from=&to=&format=pdf|csv|json`: the member's journal
/// entries and episodes of a range. The audit log records that an export happened (and its
/// format), nothing of what it held.
struct ExportRoutes: Sendable {
    let services: AttestServices

    func register(on signedIn: RouterGroup<AttestRequestContext>) {
        signedIn.get("me/export") { request, context -> Response in
            let (campus, _) = try JournalRoutes.member(context)
            let session = try context.requireSession()
            let (from, to, format) = try ExportHTTP.parse(
                QueryParameters(request, accepting: ["from", "to", "format"]), today: campus.localDate(at: services.clock()),
                defaultFormat: .pdf)
            return try await ExportHTTP.ownExport(
                services: services, campus: campus, user: session.user, from: from, to: to, format: format)
        }
    }
}

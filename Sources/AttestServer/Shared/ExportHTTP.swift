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

/// A member's export of a range, for the API's `me/export`, the pages' download and a
/// clinician's shared link: its range and format, and the response streaming it.
package enum ExportHTTP {
    /// The range and format of an export; every problem named.
    package static func parse(_ query: QueryParameters, today: LocalDate, defaultFormat: MemberExport.Format) throws -> (
        LocalDate, LocalDate, MemberExport.Format
    ) {
        var problems = query.problems
        let (from, to) = query.dateRange(today: today, problems: &problems)
        var format = defaultFormat
        if let text = query["format"] {
            if let chosen = MemberExport.Format(rawValue: text) {
                format = chosen
            } else {
                problems.append(.init(field: "format", message: "must be pdf, csv or json"))
            }
        }
        guard problems.isEmpty else { throw Problem.validation(problems) }
        return (from, to, format)
    }

    /// Whether the member asked for their health profile in the export (`profile=true`).
    package static func wantsProfile(_ query: QueryParameters) throws -> Bool {
        switch query["profile"] {
        case nil, "false": return false
        case "true": return true
        default: throw Problem.validation([.init(field: "profile", message: "must be true or false")])
        }
    }

    /// Whom an export is of, as its heading names them: "Ana Ruiz <ana@…>", or the email alone.
    package static func name(of user: User) -> String {
        user.displayName.isEmpty || user.displayName == user.email ? user.email : "\(user.displayName) <\(user.email)>"
    }

    /// The export of `user`'s range, as the response's body and headers; a PDF's words in
    /// `language` (the reader's: the page's, or the best of `Accept-Language`).
    /// `auditedAs`: the member's own export, recorded in the audit log as this actor's.
    package static func export(
        services: AttestServices, campus: Campus, user: UserID, member: String, from: LocalDate, to: LocalDate, format: MemberExport.Format,
        language: String, disposition: String, admitted: MemberWork.Ticket? = nil, auditedAs actor: String? = nil,
        withProfile: Bool = false
    ) async throws -> Response {
        let exports = MemberExports(journal: services.journal, episodes: services.episodes)
        let ticket = try admitted ?? services.limiters.admitExport(campus: campus.id, member: user)
        let prepared: MemberExports.Prepared
        do {
            if let actor {
                let profile = withProfile ? try await services.profiles.profile(campus: campus.id, user: user) : nil
                prepared = try await exports.prepareOwn(
                    campus: campus, user: user, member: member, actor: actor, from: from, to: to, format: format, now: services.clock(),
                    profile: profile, language: language)
            } else {
                prepared = try await exports.prepare(
                    campus: campus, user: user, member: member, from: from, to: to, format: format, now: services.clock(),
                    language: language)
            }
        } catch {
            ticket.finished()
            throw error
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: format.contentType, .cacheControl: "private, no-store",
                .contentDisposition: "\(disposition); filename=\"health-journal-\(from)-\(to).\(format.rawValue)\"",
            ],
            body: ResponseBody { writer in
                // The member's next export is let in before this one's end is sent, so a client
                // that asks again on reading it is not refused as if two ran at once.
                do {
                    try await prepared.write { chunk in
                        if !chunk.isEmpty { try await writer.write(ByteBuffer(bytes: chunk)) }
                    }
                } catch {
                    ticket.finished()
                    throw error
                }
                ticket.finished()
                try await writer.finish(nil)
            })
    }

    /// The signed-in member's own export, recorded in the audit log (that it happened and its
    /// format, nothing of what it held): the API's `me/export` and the pages' download.
    /// `withProfile`: the member's health profile heads it (they ticked it).
    package static func ownExport(
        services: AttestServices, campus: Campus, user: User, from: LocalDate, to: LocalDate, format: MemberExport.Format,
        language: String, withProfile: Bool = false
    ) async throws -> Response {
        try await export(
            services: services, campus: campus, user: user.id, member: name(of: user), from: from, to: to, format: format,
            language: language, disposition: "attachment", auditedAs: "user:\(user.email)", withProfile: withProfile)
    }
}

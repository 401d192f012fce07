import AttestPlugins
import AttestServer
import Foundation
import HTTPTypes
import Hummingbird
import Identity
import NIOCore
import Tenancy

/// The SCIM 2.0 service of each campus (RFC 7644) at `/scim/v2/campuses/{campus}/`: Users,
/// Groups and the discovery resources, for the university's identity provider with a
/// `provisioner` token, which opens nothing else. Errors are SCIM error messages.
package struct SCIMRoutes: Sendable {
    let services: AttestServices
    let origin: String?

    package init(services: AttestServices, origin: String?) { (self.services, self.origin) = (services, origin) }

    /// The largest body: a PUT or PATCH naming `SCIMSchemas.maxMembersPerRequest` members fits.
    static let bodyLimit = 2 << 20

    package func register(on router: Router<AttestRequestContext>) {
        let scim = router.group("scim/v2/campuses/:campus")
            .add(middleware: SCIMErrorMiddleware())
            .add(middleware: CampusMiddleware(directory: services.campuses))
            .add(middleware: ProvisionerMiddleware(services: services))
        // Any other path here: a SCIM 404 (RFC 7644 §3.12), not the platform's problem.
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete] {
            scim.on("**", method: method) { request, _ -> Response in
                throw SCIMError(
                    status: 404,
                    detail: "No SCIM resource here: this service has Users, Groups, Schemas, ResourceTypes and ServiceProviderConfig.")
            }
        }
        scim.post(".search") { _, _ -> Response in
            throw SCIMError(
                status: 501, detail: "Searching several resource types at once is not supported: GET Users or Groups with a filter.")
        }
        scim.get("ServiceProviderConfig") { request, context in
            Self.answer(SCIMSchemas.serviceProviderConfig(base: try base(request, context)))
        }
        scim.get("Schemas") { request, context in Self.list(SCIMSchemas.schemas(base: try base(request, context))) }
        scim.get("Schemas/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard let schema = SCIMSchemas.schemas(base: try base(request, context)).first(where: { $0["id"] == .string(id) }) else {
                throw SCIMError(status: 404, detail: "No schema \(id) here: GET Schemas lists them.")
            }
            return Self.answer(schema)
        }
        scim.get("ResourceTypes") { request, context in Self.list(SCIMSchemas.resourceTypes(base: try base(request, context))) }
        scim.get("ResourceTypes/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            guard let type = SCIMSchemas.resourceTypes(base: try base(request, context)).first(where: { $0["id"] == .string(id) }) else {
                throw SCIMError(status: 404, detail: "No resource type \(id) here: User and Group.")
            }
            return Self.answer(type)
        }

        scim.get("Users") { request, context in
            let (campus, query) = (try context.requireCampus(), try Query(request))
            let page = try await services.directory.users(
                campus: campus, filter: query.filter, startIndex: query.startIndex, count: query.count, base: try base(request, context))
            return Self.page(page, query: query)
        }
        scim.post("Users") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let resource = try await services.directory.createUser(
                campus: campus, body: try await Self.body(request, context), actor: machine, base: try base(request, context))
            return Self.answer(resource, status: .created, location: true)
        }
        scim.get("Users/:id") { request, context in
            let query = try Query(request, listing: false)
            let resource = try await services.directory.user(
                campus: try context.requireCampus(), id: try Self.id(context), base: try base(request, context))
            return Self.answer(resource, query: query, ifNoneMatch: request.headers[.ifNoneMatch])
        }
        scim.put("Users/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let resource = try await services.directory.replaceUser(
                campus: campus, id: try Self.id(context), body: try await Self.body(request, context), ifMatch: request.headers[.ifMatch],
                actor: machine, base: try base(request, context))
            return Self.answer(resource)
        }
        scim.patch("Users/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let operations = try SCIMPatch.operations(try await Self.body(request, context))
            let resource = try await services.directory.patchUser(
                campus: campus, id: try Self.id(context), operations: operations, ifMatch: request.headers[.ifMatch], actor: machine,
                base: try base(request, context))
            return Self.answer(resource)
        }
        scim.delete("Users/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            if let erased = try await services.directory.deleteUser(
                campus: campus, id: try Self.id(context), ifMatch: request.headers[.ifMatch], actor: machine,
                base: try base(request, context))
            {
                // The erasure has committed: the directory is told so whatever follows (a retried
                // DELETE would find nobody); what a module failed to forget, its upkeep purges.
                for erasure in services.erasures {
                    do { _ = try await erasure.forget(erased, campus: campus) } catch {
                        context.logger.warning(
                            "erased a user, but rows naming them remain until the daily upkeep",
                            metadata: ["campus": "\(campus.slug)", "erasure": "\(type(of: erasure))", "error": "\(error)"])
                    }
                }
            }
            return Response(status: .noContent)
        }

        scim.get("Groups") { request, context in
            let (campus, query) = (try context.requireCampus(), try Query(request))
            let page = try await services.directory.groups(
                campus: campus, filter: query.filter, startIndex: query.startIndex, count: query.count, members: query.wants("members"),
                base: try base(request, context))
            return Self.page(page, query: query)
        }
        scim.post("Groups") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let resource = try await services.directory.createGroup(
                campus: campus, body: try await Self.body(request, context), actor: machine, base: try base(request, context))
            return Self.answer(resource, status: .created, location: true)
        }
        scim.get("Groups/:id") { request, context in
            let query = try Query(request, listing: false)
            let resource = try await services.directory.group(
                campus: try context.requireCampus(), id: try Self.id(context), members: query.wants("members"),
                base: try base(request, context))
            return Self.answer(resource, query: query, ifNoneMatch: request.headers[.ifNoneMatch])
        }
        scim.put("Groups/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let resource = try await services.directory.replaceGroup(
                campus: campus, id: try Self.id(context), body: try await Self.body(request, context), ifMatch: request.headers[.ifMatch],
                actor: machine, base: try base(request, context))
            return Self.answer(resource)
        }
        scim.patch("Groups/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            let operations = try SCIMPatch.operations(try await Self.body(request, context))
            let resource = try await services.directory.patchGroup(
                campus: campus, id: try Self.id(context), operations: operations, ifMatch: request.headers[.ifMatch], actor: machine,
                base: try base(request, context))
            return Self.answer(resource)
        }
        scim.delete("Groups/:id") { request, context in
            let (campus, machine) = (try context.requireCampus(), try context.requireMachine())
            try await services.directory.deleteGroup(
                campus: campus, id: try Self.id(context), ifMatch: request.headers[.ifMatch], actor: machine,
                base: try base(request, context))
            return Response(status: .noContent)
        }
    }

    /// The campus's SCIM base URL, for `meta.location` and `$ref`: the public URL's, else the
    /// request's host.
    func base(_ request: Request, _ context: AttestRequestContext) throws -> String {
        let slug = try context.requireCampus().slug
        let origin = self.origin ?? request.head.authority.map { "http://\($0)" } ?? ""
        return "\(origin)/scim/v2/campuses/\(slug)"
    }

    static func id(_ context: AttestRequestContext) throws -> UUID {
        guard let text = context.parameters.get("id"), let id = UUID(uuidString: text) else {
            throw SCIMError(status: 404, detail: "No resource has the id \(context.parameters.get("id") ?? "") at this campus.")
        }
        return id
    }

    /// A request's JSON object (`application/scim+json` or `application/json`).
    static func body(_ request: Request, _ context: AttestRequestContext) async throws -> [String: JSONValue] {
        if let type = request.headers[.contentType] {
            let bare = type.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard bare == "application/scim+json" || bare == "application/json" else {
                throw SCIMError(status: 415, detail: "Send the body as application/scim+json.")
            }
        }
        let buffer: ByteBuffer
        do { buffer = try await request.collectBody(context: context, limit: bodyLimit) } catch let problem as Problem {
            throw SCIMError(
                status: Int(problem.status.code),
                detail: problem.status.code == 413
                    ? "The body is larger than \(bodyLimit >> 20) MiB: send at most \(SCIMSchemas.maxMembersPerRequest) members at once, "
                        + "as PATCH add operations." : problem.detail)
        }
        let parsed = buffer.withUnsafeReadableBytes { bytes in Result { () throws(JSONSyntaxError) in try JSONValue(parsing: bytes) } }
        guard case .success(.object(let object)) = parsed else {
            throw SCIMError.invalidSyntax("The body is not a JSON object.")
        }
        return object
    }

    /// A list's and a read's query: `filter`, `startIndex`, `count`, `attributes`, `excludedAttributes`.
    struct Query {
        var filter: SCIMFilter?
        var startIndex = 1
        var count = 100
        var attributes: [String] = []
        var excluded: [String] = []

        init(_ request: Request, listing: Bool = true) throws {
            var seen = Set<String>()
            // Read from the raw query: a client may write a space as `+` (form encoding), so a
            // `+` is a space and a literal one comes as %2B.
            for pair in (request.uri.query ?? "").split(separator: "&") where !pair.isEmpty {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard let key = Self.decoded(parts[0]), let text = Self.decoded(parts.count == 2 ? parts[1] : "") else {
                    throw SCIMError.invalidSyntax("the query string is not percent-encoded UTF-8")
                }
                guard seen.insert(key.lowercased()).inserted else { throw SCIMError.invalidSyntax("\(key) is given more than once") }
                switch key.lowercased() {
                case "filter" where listing:
                    do { filter = try SCIMFilter.parse(text) } catch { throw SCIMError.invalidFilter(error.message) }
                case "startindex" where listing:
                    guard let number = Int(text) else { throw SCIMError.invalidValue("startIndex must be a whole number") }
                    startIndex = max(1, number)
                case "count" where listing:
                    guard let number = Int(text) else { throw SCIMError.invalidValue("count must be a whole number") }
                    count = min(max(0, number), SCIMSchemas.maxPageSize)
                case "attributes": attributes = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                case "excludedattributes": excluded = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                case "sortby", "sortorder": throw SCIMError(status: 400, scimType: "invalidValue", detail: "Sorting is not supported.")
                default: throw SCIMError.invalidSyntax("\(key) is not a parameter here")
                }
            }
        }

        static func decoded(_ text: Substring) -> String? {
            text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }

        /// Whether `attribute` is returned.
        func wants(_ attribute: String) -> Bool {
            if !attributes.isEmpty {
                return attributes.contains {
                    $0.caseInsensitiveCompare(attribute) == .orderedSame || $0.lowercased().hasPrefix(attribute.lowercased() + ".")
                }
            }
            return !excluded.contains { $0.caseInsensitiveCompare(attribute) == .orderedSame }
        }

        /// `json` cut to the attributes asked for; `id`, `schemas` and `meta` always stay.
        func project(_ json: JSONValue) -> JSONValue {
            guard case .object(var object) = json, !attributes.isEmpty || !excluded.isEmpty else { return json }
            let always: Set<String> = ["id", "schemas", "meta"]
            if !attributes.isEmpty {
                var kept: [String: JSONValue] = [:]
                for (key, value) in object where always.contains(key) { kept[key] = value }
                for attribute in attributes {
                    let parts = Self.parts(attribute)
                    guard let key = object.keys.first(where: { $0.caseInsensitiveCompare(parts.top) == .orderedSame }),
                        let value = object[key]
                    else { continue }
                    if let sub = parts.sub, case .object(let members) = value,
                        let subKey = members.keys.first(where: { $0.caseInsensitiveCompare(sub) == .orderedSame })
                    {
                        var existing: [String: JSONValue] = [:]
                        if case .object(let old)? = kept[key] { existing = old }
                        existing[subKey] = members[subKey]
                        kept[key] = .object(existing)
                    } else if parts.sub == nil {
                        kept[key] = value
                    }
                }
                return .object(kept)
            }
            for attribute in excluded {
                let parts = Self.parts(attribute)
                guard let key = object.keys.first(where: { $0.caseInsensitiveCompare(parts.top) == .orderedSame }), !always.contains(key)
                else {
                    continue
                }
                if let sub = parts.sub {
                    if case .object(var members)? = object[key] {
                        for subKey in members.keys where subKey.caseInsensitiveCompare(sub) == .orderedSame { members[subKey] = nil }
                        object[key] = .object(members)
                    }
                } else {
                    object[key] = nil
                }
            }
            return .object(object)
        }

        /// `name.givenName` → (name, givenName); an extension's `urn:…:User:employeeNumber` → (urn…:User, employeeNumber).
        static func parts(_ attribute: String) -> (top: String, sub: String?) {
            if let urn = SCIMFilter.schemaURNs.first(where: { attribute.lowercased().hasPrefix($0.lowercased() + ":") }) {
                return (urn, String(attribute.dropFirst(urn.count + 1)))
            }
            let pieces = attribute.split(separator: ".", maxSplits: 1)
            return (pieces.first.map(String.init) ?? attribute, pieces.count == 2 ? String(pieces[1]) : nil)
        }
    }

    static let contentType = "application/scim+json; charset=utf-8"

    static func json(_ value: JSONValue) -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ByteBuffer(bytes: (try? encoder.encode(value)) ?? Data("{}".utf8))
    }

    static func answer(_ value: JSONValue) -> Response {
        Response(status: .ok, headers: [.contentType: contentType], body: .init(byteBuffer: json(value)))
    }

    static func answer(
        _ resource: Directory.Resource, status: HTTPResponse.Status = .ok, location: Bool = false, query: Query? = nil,
        ifNoneMatch: String? = nil
    ) -> Response {
        var headers: HTTPFields = [.contentType: contentType, .eTag: resource.version, .cacheControl: "no-store"]
        if let ifNoneMatch, Directory.matches(ifNoneMatch, resource.version) {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        if location, case .string(let url)? = resource.json["meta"]?["location"] { headers[.location] = url }
        return Response(status: status, headers: headers, body: .init(byteBuffer: json(query?.project(resource.json) ?? resource.json)))
    }

    static func list(_ items: [JSONValue]) -> Response {
        answer(
            .object([
                "schemas": .array([.string(SCIMSchemas.listResponse)]), "totalResults": .number(Double(items.count)),
                "startIndex": .number(1), "itemsPerPage": .number(Double(items.count)), "Resources": .array(items),
            ]))
    }

    static func page(_ page: Directory.Page, query: Query) -> Response {
        var response = answer(
            .object([
                "schemas": .array([.string(SCIMSchemas.listResponse)]), "totalResults": .number(Double(page.total)),
                "startIndex": .number(Double(query.startIndex)), "itemsPerPage": .number(Double(page.resources.count)),
                "Resources": .array(page.resources.map { query.project($0.json) }),
            ]))
        response.headers[.cacheControl] = "no-store"
        return response
    }
}

/// Admits a `provisioner` token of the request's campus, and nothing else (a member's,
/// a screener's, an admin's, a laboratory's or another campus's token is a 401).
struct ProvisionerMiddleware: RouterMiddleware {
    typealias Context = AttestRequestContext
    let services: AttestServices
    let bearer: BearerAuthentication

    init(services: AttestServices) {
        self.services = services
        bearer = BearerAuthentication(services: services)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let campus = try context.requireCampus()
        let machine = try await bearer.authenticate(
            request, context, kept: { _ in nil },
            read: { try await services.machineTokens.authenticate(campus: campus.id, token: $0, role: .provisioner) })
        var context = context
        context.machine = "scim:\(machine.name)"
        return try await next(request, context)
    }
}

/// Every error of the SCIM routes as a SCIM error message (RFC 7644 §3.12), the
/// platform's own problems (unknown campus, bad token, database outage) included.
struct SCIMErrorMiddleware: RouterMiddleware {
    typealias Context = AttestRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await ProblemMiddleware<Context>().handle(request, context: context) { request, context in
                do { return try await next(request, context) } catch let error as SCIMError {
                    return Self.response(status: error.status, scimType: error.scimType, detail: error.detail, headers: [:])
                }
            }
        } catch let problem as Problem {
            var headers = problem.headers
            headers[.contentType] = nil
            let detail =
                problem.errors.isEmpty
                ? problem.detail : problem.detail + " " + problem.errors.map { "\($0.field): \($0.message)" }.joined(separator: "; ")
            return Self.response(status: Int(problem.status.code), scimType: nil, detail: detail, headers: headers)
        }
    }

    static func response(status: Int, scimType: String?, detail: String, headers: HTTPFields) -> Response {
        var object: [String: JSONValue] = [
            "schemas": .array([.string(SCIMSchemas.error)]), "status": .string("\(status)"), "detail": .string(detail),
        ]
        if let scimType { object["scimType"] = .string(scimType) }
        var headers = headers
        headers[.contentType] = SCIMRoutes.contentType
        headers[.cacheControl] = "no-store"
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers, body: .init(byteBuffer: SCIMRoutes.json(.object(object))))
    }
}

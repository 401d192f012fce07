import AttestPlugins
import Foundation

/// Why a SCIM request failed, as RFC 7644 §3.12 says it: an HTTP status, a `scimType` where
/// the RFC names one, and a detail for the person reading the identity provider's log.
public struct SCIMError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var scimType: String?
    public var detail: String

    public init(status: Int, scimType: String? = nil, detail: String) {
        (self.status, self.scimType, self.detail) = (status, scimType, detail)
    }

    public var description: String { "\(status) \(scimType ?? "-"): \(detail)" }

    public static func invalidValue(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "invalidValue", detail: detail) }
    public static func invalidSyntax(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "invalidSyntax", detail: detail) }
    public static func invalidPath(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "invalidPath", detail: detail) }
    public static func noTarget(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "noTarget", detail: detail) }
    public static func invalidFilter(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "invalidFilter", detail: detail) }
    public static func uniqueness(_ detail: String) -> SCIMError { SCIMError(status: 409, scimType: "uniqueness", detail: detail) }
    public static func mutability(_ detail: String) -> SCIMError { SCIMError(status: 400, scimType: "mutability", detail: detail) }
    public static func notFound(_ kind: String, _ id: String) -> SCIMError {
        SCIMError(status: 404, detail: "No \(kind) has the id \(id) at this campus.")
    }
    public static let preconditionFailed = SCIMError(
        status: 412, detail: "The resource changed since the version named in If-Match: read it again and retry.")
}

/// The schemas this service publishes (RFC 7643 §8.7.1, cut to what it keeps) and the
/// attribute definitions a resource is checked against.
public enum SCIMSchemas {
    public static let user = "urn:ietf:params:scim:schemas:core:2.0:User"
    public static let enterpriseUser = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
    public static let group = "urn:ietf:params:scim:schemas:core:2.0:Group"
    public static let listResponse = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
    public static let patchOp = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
    public static let error = "urn:ietf:params:scim:api:messages:2.0:Error"

    /// One attribute of a schema.
    public struct Attribute: Sendable {
        public enum Kind: String, Sendable { case string, boolean, complex, reference, dateTime }
        public var name: String
        public var kind: Kind
        public var multiValued = false
        public var required = false
        public var caseExact = false
        public var mutability = "readWrite"
        public var returned = "default"
        public var uniqueness = "none"
        public var canonicalValues: [String] = []
        public var referenceTypes: [String] = []
        public var subAttributes: [Attribute] = []
        public var description: String

        var writable: Bool { mutability == "readWrite" || mutability == "immutable" || mutability == "writeOnly" }

        var json: JSONValue {
            var object: [String: JSONValue] = [
                "name": .string(name), "type": .string(kind.rawValue), "multiValued": .bool(multiValued),
                "description": .string(description), "required": .bool(required), "mutability": .string(mutability),
                "returned": .string(returned),
            ]
            if kind != .complex && kind != .boolean {
                object["caseExact"] = .bool(caseExact)
                object["uniqueness"] = .string(uniqueness)
            }
            if !canonicalValues.isEmpty { object["canonicalValues"] = .array(canonicalValues.map(JSONValue.string)) }
            if !referenceTypes.isEmpty { object["referenceTypes"] = .array(referenceTypes.map(JSONValue.string)) }
            if !subAttributes.isEmpty { object["subAttributes"] = .array(subAttributes.map(\.json)) }
            return .object(object)
        }
    }

    public static let userAttributes: [Attribute] = [
        Attribute(
            name: "userName", kind: .string, required: true, uniqueness: "server",
            description: "The name the identity provider knows the user by; unique at the campus. When it is an email address "
                + "and no email is given, it is the user's email."),
        Attribute(
            name: "name", kind: .complex,
            subAttributes: [
                Attribute(name: "formatted", kind: .string, description: "The full name, formatted for display."),
                Attribute(name: "familyName", kind: .string, description: "The family name."),
                Attribute(name: "givenName", kind: .string, description: "The given name."),
            ], description: "The user's name (kept as given)."),
        Attribute(name: "displayName", kind: .string, description: "The name shown to health officers and on the user's pages."),
        Attribute(
            name: "emails", kind: .complex, multiValued: true,
            subAttributes: [
                Attribute(name: "value", kind: .string, description: "An email address."),
                Attribute(name: "type", kind: .string, canonicalValues: ["work", "home", "other"], description: "work, home or other."),
                Attribute(name: "primary", kind: .boolean, description: "The address the campus uses (at most one)."),
            ],
            description: "The user's email addresses: the primary one (else the first of type work, else the first) is the "
                + "address sign-in matches and messages go to."),
        Attribute(
            name: "active", kind: .boolean,
            description: "false deactivates: no sign-in, every session and link revoked, no reminders. Left out (unassigned), the "
                + "user is active."),
        Attribute(
            name: "groups", kind: .complex, multiValued: true, mutability: "readOnly",
            subAttributes: [
                Attribute(name: "value", kind: .string, mutability: "readOnly", description: "The group's id."),
                Attribute(
                    name: "$ref", kind: .reference, mutability: "readOnly", referenceTypes: ["Group"], description: "The group's URI."),
                Attribute(name: "display", kind: .string, mutability: "readOnly", description: "The group's displayName."),
            ], description: "The groups the user belongs to (change them through the Group resources)."),
    ]

    public static let enterpriseAttributes: [Attribute] = [
        Attribute(name: "employeeNumber", kind: .string, description: "The campus's number for the person."),
        Attribute(name: "department", kind: .string, description: "The person's department."),
    ]

    public static let groupAttributes: [Attribute] = [
        Attribute(name: "displayName", kind: .string, required: true, description: "The group's name; roles may follow it."),
        Attribute(
            name: "members", kind: .complex, multiValued: true,
            subAttributes: [
                Attribute(name: "value", kind: .string, mutability: "immutable", description: "A member user's id."),
                Attribute(
                    name: "$ref", kind: .reference, mutability: "immutable", referenceTypes: ["User"], description: "The user's URI."),
                Attribute(name: "display", kind: .string, mutability: "readOnly", description: "The user's displayName."),
                Attribute(
                    name: "type", kind: .string, mutability: "immutable", canonicalValues: ["User"],
                    description: "User: groups hold users only."),
            ], description: "The group's members: users of this campus."),
    ]

    static func schema(id: String, name: String, description: String, attributes: [Attribute], base: String) -> JSONValue {
        .object([
            "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:Schema")]),
            "id": .string(id), "name": .string(name), "description": .string(description),
            "attributes": .array(attributes.map(\.json)),
            "meta": .object(["resourceType": .string("Schema"), "location": .string("\(base)/Schemas/\(id)")]),
        ])
    }

    /// Every schema, as `GET /Schemas` lists them.
    public static func schemas(base: String) -> [JSONValue] {
        [
            schema(id: user, name: "User", description: "A member of the campus.", attributes: userAttributes, base: base),
            schema(
                id: enterpriseUser, name: "EnterpriseUser", description: "The enterprise extension's attributes this service keeps.",
                attributes: enterpriseAttributes, base: base),
            schema(
                id: group, name: "Group", description: "A directory group; roles may follow it.", attributes: groupAttributes, base: base),
        ]
    }

    /// The resource types, as `GET /ResourceTypes` lists them.
    public static func resourceTypes(base: String) -> [JSONValue] {
        func type(_ name: String, _ endpoint: String, _ schema: String, extensions: [String]) -> JSONValue {
            .object([
                "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:ResourceType")]),
                "id": .string(name), "name": .string(name), "endpoint": .string(endpoint), "schema": .string(schema),
                "description": .string(name == "User" ? "Members of the campus" : "Directory groups"),
                "schemaExtensions": .array(extensions.map { .object(["schema": .string($0), "required": .bool(false)]) }),
                "meta": .object(["resourceType": .string("ResourceType"), "location": .string("\(base)/ResourceTypes/\(name)")]),
            ])
        }
        return [type("User", "/Users", user, extensions: [enterpriseUser]), type("Group", "/Groups", group, extensions: [])]
    }

    /// Attributes RFC 7643 defines that this service does not keep: a write naming them is
    /// accepted and they are left out (an identity provider's default mappings send several:
    /// Entra ID's `title`, `phoneNumbers`, `addresses`, `preferredLanguage`), where an attribute
    /// no schema defines is an `invalidPath`.
    static let unkept: [String: Set<String>] = [
        user.lowercased(): [
            "nickname", "profileurl", "title", "usertype", "preferredlanguage", "locale", "timezone", "password", "phonenumbers", "ims",
            "photos", "addresses", "entitlements", "roles", "x509certificates",
        ],
        enterpriseUser.lowercased(): ["costcenter", "organization", "division", "manager"],
    ]

    /// Whether `attribute` of the schema `urn` is one RFC 7643 defines and this service does not keep.
    public static func isUnkept(_ attribute: String, of urn: String) -> Bool {
        unkept[urn.lowercased()]?.contains(attribute.lowercased()) ?? false
    }

    /// The most results one page gives.
    public static let maxPageSize = 1000
    /// The most members one request may name (a PUT's, or a PATCH's operations together).
    public static let maxMembersPerRequest = 20_000
    /// The most operations in one PATCH.
    public static let maxOperations = 1000

    /// `GET /ServiceProviderConfig`.
    public static func serviceProviderConfig(base: String) -> JSONValue {
        .object([
            "schemas": .array([.string("urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig")]),
            "patch": .object(["supported": .bool(true)]),
            "bulk": .object(["supported": .bool(false), "maxOperations": .number(0), "maxPayloadSize": .number(0)]),
            "filter": .object(["supported": .bool(true), "maxResults": .number(Double(maxPageSize))]),
            "changePassword": .object(["supported": .bool(false)]),
            "sort": .object(["supported": .bool(false)]),
            "etag": .object(["supported": .bool(true)]),
            "authenticationSchemes": .array([
                .object([
                    "type": .string("oauthbearertoken"), "name": .string("Bearer token"), "primary": .bool(true),
                    "description": .string("A provisioner token: attest token issue <campus> --provisioner <name>"),
                    "specUri": .string("https://www.rfc-editor.org/rfc/rfc6750"),
                ])
            ]),
            "meta": .object(["resourceType": .string("ServiceProviderConfig"), "location": .string("\(base)/ServiceProviderConfig")]),
        ])
    }

    // MARK: Checking a resource's attributes

    /// The longest string attribute kept, in Unicode scalars.
    public static let maxString = 300
    /// The most elements of a multi-valued attribute other than members.
    public static let maxElements = 20

    /// The writable attributes of `object` that `attributes` defines, under their own names
    /// (matched without case); unknown and read-only attributes dropped, null ones left out.
    /// Booleans may come as the strings "true" and "false" (as Microsoft Entra ID sends them).
    static func clean(_ object: [String: JSONValue], _ attributes: [Attribute], at prefix: String) throws(SCIMError) -> [String: JSONValue]
    {
        var cleaned: [String: JSONValue] = [:]
        for (key, value) in object {
            guard let attribute = attributes.first(where: { $0.name.caseInsensitiveCompare(key) == .orderedSame }), attribute.writable
            else {
                continue
            }
            if case .null = value { continue }
            if let checked = try check(value, attribute, at: prefix + attribute.name) { cleaned[attribute.name] = checked }
        }
        return cleaned
    }

    static func check(_ value: JSONValue, _ attribute: Attribute, at path: String) throws(SCIMError) -> JSONValue? {
        if attribute.multiValued {
            let items: [JSONValue]
            if case .array(let array) = value { items = array } else { items = [value] }
            let limit = attribute.name == "members" ? maxMembersPerRequest : maxElements
            guard items.count <= limit else { throw .invalidValue("\(path) holds more than \(limit) values") }
            var single = attribute
            single.multiValued = false
            var checked: [JSONValue] = []
            for (index, item) in items.enumerated() {
                if case .null = item { continue }
                if let value = try check(item, single, at: "\(path)[\(index)]") { checked.append(value) }
            }
            return .array(checked)
        }
        switch attribute.kind {
        case .string, .reference, .dateTime:
            switch value {
            case .string(let text):
                guard text.unicodeScalars.count <= maxString,
                    !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { throw .invalidValue("\(path) must be at most \(maxString) characters, without control characters") }
                return .string(text)
            case .number, .bool:
                throw .invalidValue("\(path) must be a string")
            default: throw .invalidValue("\(path) must be a string")
            }
        case .boolean:
            switch value {
            case .bool: return value
            case .string(let text) where text.lowercased() == "true": return .bool(true)
            case .string(let text) where text.lowercased() == "false": return .bool(false)
            default: throw .invalidValue("\(path) must be true or false")
            }
        case .complex:
            guard case .object(let members) = value else { throw .invalidValue("\(path) must be an object") }
            let cleaned = try clean(members, attribute.subAttributes, at: path + ".")
            return cleaned.isEmpty ? nil : .object(cleaned)
        }
    }
}

import AttestPlugins
import Foundation

/// A PATCH request's operations (RFC 7644 §3.5.2) applied to a resource's writable
/// attributes as JSON: `add`, `replace` and `remove`, with or without a `path`, value filters
/// and sub-attributes, extension attributes under their schema's URN. The result is checked
/// again as a whole resource would be, so a PATCH can store nothing a PUT could not.
public enum SCIMPatch {
    /// One operation.
    public struct Operation: Sendable {
        public enum Kind: String, Sendable { case add, replace, remove }
        public var kind: Kind
        public var path: SCIMPath?
        public var value: JSONValue?
    }

    /// The operations of a PatchOp message.
    public static func operations(_ body: [String: JSONValue]) throws(SCIMError) -> [Operation] {
        if case .array(let schemas)? = SCIMFilter.member("schemas", of: .object(body)),
            !schemas.contains(.string(SCIMSchemas.patchOp))
        {
            throw .invalidSyntax("a PATCH body's schemas must hold \(SCIMSchemas.patchOp)")
        }
        guard case .array(let items)? = SCIMFilter.member("Operations", of: .object(body)), !items.isEmpty else {
            throw .invalidSyntax("a PATCH body needs Operations: a list of {op, path, value}")
        }
        guard items.count <= SCIMSchemas.maxOperations else {
            throw .invalidSyntax("a PATCH may hold at most \(SCIMSchemas.maxOperations) operations")
        }
        var operations: [Operation] = []
        for (index, item) in items.enumerated() {
            guard case .string(let name)? = SCIMFilter.member("op", of: item), let kind = Operation.Kind(rawValue: name.lowercased()) else {
                throw .invalidSyntax("Operations[\(index)].op must be add, replace or remove")
            }
            var path: SCIMPath?
            switch SCIMFilter.member("path", of: item) {
            case .string(let text)?:
                do { path = try SCIMFilter.parsePath(text) } catch { throw .invalidPath("Operations[\(index)].path: \(error.message)") }
            case nil, .null?: path = nil
            default: throw .invalidPath("Operations[\(index)].path must be a string")
            }
            let value = SCIMFilter.member("value", of: item)
            if kind == .remove, path == nil { throw .noTarget("Operations[\(index)]: remove needs a path") }
            if kind != .remove, value == nil || value == .null {
                throw .invalidValue("Operations[\(index)]: \(kind.rawValue) needs a value")
            }
            operations.append(Operation(kind: kind, path: path, value: value))
        }
        return operations
    }

    /// The schemas of a resource type: the attributes of each, the first the core one.
    public typealias Schemas = [(urn: String, attributes: [SCIMSchemas.Attribute])]

    /// Applies `operations` to `document` (the resource's writable attributes, extension
    /// attributes under their URN).
    public static func apply(_ operations: [Operation], to document: inout [String: JSONValue], schemas: Schemas) throws(SCIMError) {
        for operation in operations {
            if let path = operation.path {
                try apply(operation.kind, path, operation.value, to: &document, schemas: schemas)
            } else {
                guard case .object(let members)? = operation.value else {
                    throw .invalidValue("\(operation.kind.rawValue) without a path needs an object of attributes as its value")
                }
                for (key, value) in members {
                    // As a PUT's body is read: `id`, `schemas`, `meta` and read-only attributes are
                    // passed over (Okta renames a group with `{"id": …, "displayName": …}`).
                    if ["id", "schemas", "meta"].contains(key.lowercased()) { continue }
                    if schemas[0].attributes.contains(where: { $0.name.caseInsensitiveCompare(key) == .orderedSame && !$0.writable }) {
                        continue
                    }
                    let path: SCIMPath
                    do { path = try SCIMFilter.parsePath(key) } catch { throw .invalidPath("'\(key)': \(error.message)") }
                    try apply(operation.kind, path, value, to: &document, schemas: schemas)
                }
            }
        }
    }

    static func apply(
        _ kind: Operation.Kind, _ path: SCIMPath, _ value: JSONValue?, to document: inout [String: JSONValue], schemas: Schemas
    ) throws(SCIMError) {
        // The attribute's schema: its URN, else the core schema's, else an extension's naming it.
        var schemaIndex = 0
        if let urn = path.schema {
            guard let index = schemas.firstIndex(where: { $0.urn.caseInsensitiveCompare(urn) == .orderedSame }) else {
                throw .invalidPath("'\(path)': this service has no schema \(urn)")
            }
            schemaIndex = index
        }
        if path.attribute.isEmpty {
            // The extension's URN alone: its attributes as an object.
            guard schemaIndex > 0 else { throw .invalidPath("'\(path)' names no attribute") }
            let urn = schemas[schemaIndex].urn
            if kind == .remove {
                document[urn] = nil
                return
            }
            guard case .object(let members)? = value else { throw .invalidValue("'\(urn)' takes an object of its attributes") }
            var current: [String: JSONValue] = [:]
            if kind == .add || kind == .replace, case .object(let old)? = document[urn] { current = old }
            for (key, member) in members { current[key] = member }
            document[urn] = .object(current)
            return
        }
        guard
            let attribute = schemas[schemaIndex].attributes.first(where: { $0.name.caseInsensitiveCompare(path.attribute) == .orderedSame })
        else {
            // Nothing of the kind is kept: removing it, or writing one the RFC defines, changes nothing.
            if kind == .remove || SCIMSchemas.isUnkept(path.attribute, of: schemas[schemaIndex].urn) { return }
            throw .invalidPath("'\(path)': no attribute \(path.attribute) here")
        }
        guard attribute.writable else { throw .mutability("'\(attribute.name)' is read-only") }
        var container: [String: JSONValue]
        if schemaIndex > 0 {
            if case .object(let members)? = document[schemas[schemaIndex].urn] { container = members } else { container = [:] }
        } else {
            container = document
        }
        try apply(kind, path, value, attribute: attribute, to: &container)
        if schemaIndex > 0 {
            document[schemas[schemaIndex].urn] = container.isEmpty ? nil : .object(container)
        } else {
            document = container
        }
    }

    static func apply(
        _ kind: Operation.Kind, _ path: SCIMPath, _ value: JSONValue?, attribute: SCIMSchemas.Attribute,
        to container: inout [String: JSONValue]
    ) throws(SCIMError) {
        let name = attribute.name
        let sub = path.subAttribute.map { sub in
            attribute.subAttributes.first { $0.name.caseInsensitiveCompare(sub) == .orderedSame }?.name ?? sub
        }
        if let sub, attribute.kind != .complex { throw .invalidPath("'\(path)': \(name) has no sub-attribute \(sub)") }
        if let sub, !attribute.subAttributes.contains(where: { $0.name == sub }) {
            throw .invalidPath("'\(path)': \(name) has no sub-attribute \(sub)")
        }
        guard attribute.multiValued else {
            guard path.filter == nil else { throw .invalidPath("'\(path)': \(name) is not multi-valued") }
            if let sub {
                var object: [String: JSONValue] = [:]
                if case .object(let old)? = container[name] { object = old }
                object[sub] = kind == .remove ? nil : value
                container[name] = object.isEmpty ? nil : .object(object)
            } else if kind == .remove {
                container[name] = nil
            } else if attribute.kind == .complex, case .object(let members)? = value {
                var object: [String: JSONValue] = [:]
                if case .object(let old)? = container[name] { object = old }
                for (key, member) in members { object[key] = member }
                container[name] = .object(object)
            } else {
                container[name] = value
            }
            return
        }
        var elements: [JSONValue]
        switch container[name] {
        case .array(let items)?: elements = items
        case let single?: elements = [single]
        case nil: elements = []
        }
        let given: [JSONValue]
        switch value {
        case .array(let items)?: given = items
        case let single?: given = [single]
        case nil: given = []
        }
        if let filter = path.filter {
            let matching = elements.indices.filter { filter.matches(elements[$0]) }
            switch (kind, sub) {
            case (.remove, nil):
                let drop = Set(matching)
                elements = elements.indices.filter { !drop.contains($0) }.map { elements[$0] }
            case (.remove, let sub?):
                for index in matching { elements[index] = removing(sub, from: elements[index]) }
            case (_, let sub?):
                guard let value else { return }
                if matching.isEmpty {
                    // `emails[type eq "work"].value` of a user with no work address: add one.
                    var element = Self.equalities(filter)
                    element[sub] = value
                    elements.append(.object(element))
                } else {
                    for index in matching { elements[index] = setting(sub, value, in: elements[index]) }
                }
            case (_, nil):
                guard case .object(let members)? = value else { throw .invalidValue("'\(path)' takes an object") }
                if matching.isEmpty {
                    guard kind == .add else { throw .noTarget("'\(path)' matches no value") }
                    elements.append(.object(members))
                } else {
                    for index in matching {
                        var element: [String: JSONValue] = [:]
                        if case .object(let old) = elements[index] { element = old }
                        for (key, member) in members { element[key] = member }
                        elements[index] = .object(element)
                    }
                }
            }
        } else if let sub {
            switch kind {
            case .remove: elements = elements.map { removing(sub, from: $0) }
            default:
                guard let value else { return }
                if elements.isEmpty { elements = [.object([sub: value])] } else { elements = elements.map { setting(sub, value, in: $0) } }
            }
        } else {
            switch kind {
            case .add:
                // New values only, by `value` where they have one (a group's members: thousands at once).
                var values = Set(elements.compactMap(Self.valueText))
                for item in given {
                    if let value = Self.valueText(item) {
                        if values.insert(value).inserted { elements.append(item) }
                    } else if !elements.contains(item) {
                        elements.append(item)
                    }
                }
            case .replace:
                elements = given
            case .remove:
                if given.isEmpty {
                    elements = []
                } else {
                    // `remove` of `members` with the members to take out (as Entra ID sends it).
                    let values = Set(given.compactMap { Self.valueText($0) })
                    elements = elements.filter { Self.valueText($0).map { !values.contains($0) } ?? true }
                }
            }
        }
        if attribute.subAttributes.contains(where: { $0.name == "primary" }) { elements = onePrimary(elements) }
        container[name] = elements.isEmpty ? nil : .array(elements)
    }

    /// The `value` of an element, lower-cased (ids and addresses compare without case).
    static func valueText(_ element: JSONValue) -> String? {
        if case .string(let text)? = SCIMFilter.member("value", of: element) { return text.lowercased() }
        return nil
    }

    static func removing(_ sub: String, from element: JSONValue) -> JSONValue {
        guard case .object(var members) = element else { return element }
        for key in members.keys where key.caseInsensitiveCompare(sub) == .orderedSame { members[key] = nil }
        return .object(members)
    }

    static func setting(_ sub: String, _ value: JSONValue, in element: JSONValue) -> JSONValue {
        guard case .object(var members) = removing(sub, from: element) else { return .object([sub: value]) }
        members[sub] = value
        return .object(members)
    }

    /// The `attr eq "value"` comparisons of a filter joined by `and`: what a new element
    /// chosen by it holds.
    static func equalities(_ filter: SCIMFilter) -> [String: JSONValue] {
        switch filter {
        case .compare(let path, .eq, let value) where path.subAttribute == nil && path.filter == nil: return [path.attribute: value]
        case .and(let left, let right): return equalities(left).merging(equalities(right)) { first, _ in first }
        default: return [:]
        }
    }

    /// At most one element marked primary: the last one so marked.
    static func onePrimary(_ elements: [JSONValue]) -> [JSONValue] {
        guard let last = elements.lastIndex(where: { SCIMFilter.member("primary", of: $0) == .bool(true) }) else { return elements }
        return elements.indices.map { index in
            index == last || SCIMFilter.member("primary", of: elements[index]) != .bool(true)
                ? elements[index] : setting("primary", .bool(false), in: elements[index])
        }
    }
}

import Foundation

@testable import AttestAPI
@testable import AttestServer
@testable import AttestWeb

/// Checks real responses against `OpenAPIDocument`: the status must be documented for the
/// operation, and a JSON body must match its schema (type, required, properties with
/// additionalProperties false, items, enum, $ref). A small subset of JSON Schema, the one
/// the document uses.
enum OpenAPIValidator {
    static let document = OpenAPIDocument.value

    /// `/v1/campuses/:campus/me` → `/v1/campuses/{campus}/me`.
    static func templatePath(_ routerPath: String) -> String {
        "/" + routerPath.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
    }

    /// Problems found with a response to `method template`; empty when it conforms.
    static func problems(method: String, path template: String, status: Int, contentType: String?, body: String) -> [String] {
        guard let operation = document["paths"]?[template]?[method.lowercased()] else {
            return ["\(method) \(template) is not in the OpenAPI document"]
        }
        guard var response = operation["responses"]?["\(status)"] else {
            return ["\(method) \(template) does not document status \(status)"]
        }
        if let ref = response["$ref"]?.stringValue { response = resolve(ref) ?? response }
        guard let content = response["content"] else {
            return body.isEmpty ? [] : ["status \(status) is documented without a body, but one came"]
        }
        let mediaType = (contentType ?? "").split(separator: ";").first.map(String.init) ?? ""
        guard let schema = content[mediaType]?["schema"] else {
            return ["status \(status) does not document content type \(mediaType)"]
        }
        // Text and bytes (YAML, CSV, PDF, recordings): the documented type is what is checked.
        if !mediaType.hasSuffix("json") { return [] }
        guard let json = try? JSONSerialization.jsonObject(with: Data(body.utf8), options: [.fragmentsAllowed]) else {
            return ["the body is not JSON"]
        }
        return validate(json, against: schema, at: "$")
    }

    static func resolve(_ ref: String) -> OpenAPIValue? {
        var node: OpenAPIValue? = document
        for part in ref.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
        return node
    }

    static func validate(_ value: Any, against schema: OpenAPIValue, at path: String) -> [String] {
        if let ref = schema["$ref"]?.stringValue {
            guard let target = resolve(ref) else { return ["\(path): unresolvable \(ref)"] }
            return validate(value, against: target, at: path)
        }
        var problems: [String] = []
        var type = schema["type"]?.stringValue
        // `type: [T, "null"]`: null, or a T.
        if case .array(let types)? = schema["type"] {
            if value is NSNull, types.contains(.string("null")) { return [] }
            type = types.compactMap(\.stringValue).first { $0 != "null" }
        }
        if case .array(let allowed)? = schema["enum"] {
            let options = allowed.compactMap(\.stringValue)
            if let text = value as? String, !options.contains(text) { problems.append("\(path): \"\(text)\" is not one of \(options)") }
        }
        switch type {
        case "object":
            guard let object = value as? [String: Any] else { return ["\(path): expected an object"] }
            if case .array(let required)? = schema["required"] {
                for key in required.compactMap(\.stringValue) where object[key] == nil {
                    problems.append("\(path): missing required \(key)")
                }
            }
            let properties = schema["properties"]?.members ?? []
            for (key, item) in object {
                if let property = properties.first(where: { $0.key == key }) {
                    problems += validate(item, against: property.value, at: "\(path).\(key)")
                } else if schema["additionalProperties"] == .bool(false) {
                    problems.append("\(path): \(key) is not in the schema")
                } else if let additional = schema["additionalProperties"], additional["type"] != nil || additional["$ref"] != nil {
                    problems += validate(item, against: additional, at: "\(path).\(key)")
                }
            }
        case "array":
            guard let array = value as? [Any] else { return ["\(path): expected an array"] }
            if let items = schema["items"] {
                for (index, item) in array.enumerated() { problems += validate(item, against: items, at: "\(path)[\(index)]") }
            }
        case "string":
            guard let text = value as? String else { return ["\(path): expected a string"] }
            switch schema["format"]?.stringValue {
            case "uuid": if UUID(uuidString: text) == nil { problems.append("\(path): not a uuid") }
            case "date-time": if (try? Date(text, strategy: .iso8601)) == nil { problems.append("\(path): not a date-time") }
            case "date": if text.count != 10 { problems.append("\(path): not a date") }
            default: break
            }
        case "integer":
            if !(value is Int) && !((value as? NSNumber).map { $0.doubleValue == $0.doubleValue.rounded() } ?? false) {
                problems.append("\(path): expected an integer")
            }
        case "boolean":
            if !(value is Bool) { problems.append("\(path): expected a boolean") }
        case "number":
            if !(value is NSNumber) && !(value is Double) && !(value is Int) { problems.append("\(path): expected a number") }
        default: break
        }
        return problems
    }
}

import AttestServer
import Hummingbird

/// The API's description: `openapi.yaml` beside this file, embedded at build time.
public enum OpenAPIDocument {
    public static let yaml = embeddedOpenAPIYAML
}

/// `GET /openapi.yaml`: the API description as the file has it.
struct OpenAPIRoute: Sendable {
    func register(on router: Router<AttestRequestContext>) {
        let yaml = ByteBuffer(string: OpenAPIDocument.yaml)
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: yaml))
        }
    }
}

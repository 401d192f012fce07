import Hummingbird

/// `GET /openapi.yaml`: the API description, generated once from `OpenAPIDocument`.
struct OpenAPIRoute: Sendable {
    func register(on router: Router<AttestRequestContext>) {
        let yaml = OpenAPIDocument.yaml
        router.get("openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: ByteBuffer(string: yaml)))
        }
    }
}

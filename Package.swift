// swift-tools-version: 6.1
import PackageDescription

/// What each front end (AttestAPI, AttestWeb) builds on: the server and the core.
let frontEnd: [Target.Dependency] = [
    "AttestServer", "AttestFoundation", "AttestPostgres", "AttestPlugins", "Tenancy", "Community", "Identity", "Surveys",
    "Notifications", "Journal", "Records",
    .product(name: "Hummingbird", package: "hummingbird"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "Logging", package: "swift-log"),
]

let package = Package(
    name: "campus-attest",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "attest", targets: ["attest"]),
        .library(name: "AttestPlugins", targets: ["AttestPlugins"]),
        .library(name: "AttestCLI", targets: ["AttestCLI"]),
        .library(name: "BuiltinPlugins", targets: ["BuiltinPlugins"]),
        .library(name: "AttestPluginHTTP", targets: ["AttestPluginHTTP"]),
        // For plugin authors' tests (like swift-metrics' MetricsTestKit).
        .library(name: "AttestPluginsTesting", targets: ["AttestPluginsTesting"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        // The email channel's SMTP client: STARTTLS and implicit TLS.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // Hummingbird's own dependency: its HTTP parts, for a handler in the connection's pipeline.
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // The tests read openapi.yaml with an independent YAML parser (libyaml's).
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // Traces: the API every layer records spans with (Hummingbird's own tracing API), and
        // the OTLP/HTTP exporter `serve` and `dev` start when OTEL_EXPORTER_OTLP_ENDPOINT is set.
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Benchmarks/multipart only: vapor's multipart reader, measured against MultipartForm.
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
    ],
    targets: [
        // libpq, found through pkg-config (Debian: libpq-dev).
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        // The libpq wrapper: bound SQL, row decoding, transactions, pipelines, the pool.
        .target(
            name: "AttestPostgres",
            dependencies: [
                "CLibPQ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // schema.sql, embedded at build time, and the migration runner.
        .target(
            name: "AttestSchema",
            dependencies: ["AttestPostgres", .product(name: "Logging", package: "swift-log")],
            plugins: ["EmbedSchemaPlugin"]
        ),
        // The plugin API: vocabulary types, plugin protocols, the registry.
        // Small utilities every layer shares (one base64url codec); not part of the plugin API.
        .target(name: "AttestFoundation"),
        .target(
            name: "AttestPlugins",
            dependencies: ["AttestFoundation", .product(name: "Logging", package: "swift-log")]
        ),
        // The HTTP client the platform lends plugins, on async-http-client (also for plugin tests).
        .target(
            name: "AttestPluginHTTP",
            dependencies: [
                "AttestPlugins", .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // A test kit for plugins: a recording sink, a settable clock, a loopback HTTP server,
        // questionnaire and rule-input builders, and the badge-rule conformance check.
        .target(
            name: "AttestPluginsTesting",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPluginHTTP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Tenancy",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Where a member looks beyond the campus: community figures and testing locations.
        .target(
            name: "Community",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", "Tenancy", .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Resources"],
            plugins: ["EmbedWebPlugin"]
        ),
        .target(
            name: "Identity",
            dependencies: [
                "AttestFoundation",
                "AttestPlugins", "AttestPostgres", "Tenancy",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "Journal",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", "Tenancy", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "Surveys",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", "Tenancy", "Identity", "Notifications",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "Notifications",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", "Tenancy",
                // Web Push: RFC 8291's ECDH, HKDF and AES-GCM, and VAPID's ES256; DKIM's RSA.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                // The SMTP client.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Health records (DESIGN §11): laboratories' results, isolations, each member's status.
        .target(
            name: "Records",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPostgres", "Tenancy", "Identity", "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                // The VCI Directory snapshot's signing certificate.
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // zlib, for SMART Health Cards' raw DEFLATE payloads (Debian: zlib1g-dev).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]),
        // Built-in plugins use the plugin API only (and swift-crypto for webhook signatures).
        .target(
            name: "BuiltinPlugins",
            dependencies: ["AttestFoundation", "AttestPlugins", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The server: composition root, middleware, the one session resolver, error mapping, and
        // what both front ends need (body and form reading, exports' and recordings' responses).
        .target(
            name: "AttestServer",
            dependencies: [
                "AttestFoundation", "AttestPostgres", "AttestPlugins", "AttestPluginHTTP", "Tenancy", "Community", "Identity", "Surveys",
                "Notifications", "Journal", "Records", "CBadgeImage",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The two front ends over the same core calls; neither imports the other.
        .target(
            name: "AttestAPI",
            dependencies: frontEnd,
            exclude: ["OpenAPI/openapi.yaml"],
            plugins: ["EmbedWebPlugin"]
        ),
        .target(
            name: "AttestWeb",
            dependencies: frontEnd + [
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Crypto", package: "swift-crypto"),
                "CQREncode",
            ],
            exclude: ["Resources"],
            plugins: ["EmbedWebPlugin"]
        ),
        // The door scanner's server path: a photo or camera frame (JPEG, PNG, WebP) decoded to
        // grey and scanned for a QR code with zxing-cpp (Debian: libzxing-dev, libjpeg-dev,
        // libpng-dev, libwebp-dev). C, so that libjpeg's errors can longjmp within C; the reader
        // behind one C function in C++ (qr_reader.cpp), its exceptions caught there.
        .target(
            name: "CBadgeImage",
            linkerSettings: [.linkedLibrary("ZXing"), .linkedLibrary("jpeg"), .linkedLibrary("png16"), .linkedLibrary("webp")]
        ),
        // libqrencode, for the badge's QR code drawn by the server (Debian: libqrencode-dev).
        .systemLibrary(
            name: "CQREncode",
            pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"]), .brew(["qrencode"])]
        ),
        .target(
            name: "AttestCLI",
            dependencies: [
                "AttestFoundation", "AttestPostgres", "AttestSchema", "AttestPlugins", "AttestPluginHTTP", "Tenancy", "Community",
                "Identity",
                "Surveys", "Notifications", "Records", "Journal", "AttestServer", "AttestAPI", "AttestWeb",
                // `attest dev` adds the made-up context provider to the executable's registry.
                "BuiltinPlugins",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        ),
        .executableTarget(name: "attest", dependencies: ["AttestCLI", "BuiltinPlugins"]),
        // Benchmarks/badge's reference: a bare Hummingbird JSON route.
        .executableTarget(
            name: "attest-bench-reference",
            dependencies: [.product(name: "Hummingbird", package: "hummingbird")],
            path: "Benchmarks/Reference"
        ),

        // Benchmarks/multipart: MultipartForm against multipart-kit on a recording's upload.
        .executableTarget(
            name: "attest-bench-multipart",
            dependencies: [
                "AttestServer", .product(name: "MultipartKit", package: "multipart-kit"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/Multipart"
        ),

        // Benchmarks/reminders' Web Push half: RFC 8291 encryption against a bare AES-128-GCM seal.
        .executableTarget(
            name: "attest-bench-push",
            dependencies: ["Notifications", .product(name: "Crypto", package: "swift-crypto")],
            path: "Benchmarks/Push"
        ),

        // Benchmarks/records' SMART Health Card half: a card's whole verification against bare ES256.
        .executableTarget(
            name: "attest-bench-shc",
            dependencies: ["Records", "AttestPlugins", "AttestFoundation", .product(name: "Crypto", package: "swift-crypto")],
            path: "Benchmarks/SHC"
        ),

        // Build tool: turns schema.sql into a Swift string so the binary carries its schema.
        .executableTarget(name: "EmbedSQL", path: "Sources/EmbedSQL"),
        .plugin(name: "EmbedSchemaPlugin", capability: .buildTool(), dependencies: ["EmbedSQL", "EmbedFiles"]),
        // Build tool: the web pages' templates and static files, embedded in the binary.
        .executableTarget(name: "EmbedFiles", path: "Sources/EmbedFiles"),
        .plugin(name: "EmbedWebPlugin", capability: .buildTool(), dependencies: ["EmbedFiles", "EmbedSQL"]),

        // Shared by the test targets: the throwaway database each test gets.
        .target(
            name: "AttestTestSupport",
            dependencies: ["AttestPostgres", "AttestSchema", .product(name: "Logging", package: "swift-log")],
            path: "Tests/AttestTestSupport"
        ),
        .testTarget(
            name: "AttestPostgresTests",
            dependencies: ["AttestPostgres", "AttestTestSupport"]
        ),
        .testTarget(
            name: "BuiltinPluginsTests", dependencies: ["AttestFoundation", "BuiltinPlugins", "AttestPlugins", "AttestPluginsTesting"]),
        .testTarget(name: "SurveysTests", dependencies: ["AttestFoundation", "Surveys", "AttestPlugins", "Tenancy"]),
        .testTarget(name: "AttestFoundationTests", dependencies: ["AttestFoundation"]),
        .testTarget(
            name: "AttestSchemaTests",
            dependencies: ["AttestSchema", "AttestPostgres", "AttestTestSupport", "Tenancy"]
        ),
        // Every parser of outside data, fed generated inputs (DESIGN §9, crash-proof).
        .testTarget(
            name: "FuzzTests",
            dependencies: [
                "AttestFoundation", "AttestPlugins", "AttestPluginHTTP", "AttestPostgres", "AttestTestSupport", "BuiltinPlugins",
                "Community", "Identity",
                "Surveys", "Tenancy", "Records",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AttestServerTests",
            dependencies: [
                "AttestCLI", "AttestFoundation", "AttestServer", "AttestAPI", "AttestWeb", "AttestTestSupport", "Community", "Identity",
                "Tenancy", "Surveys",
                "AttestPlugins",
                "BuiltinPlugins",
                "Notifications", "AttestPluginHTTP", "AttestPluginsTesting", "Journal", "Records", "CZlib",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
    ]
)

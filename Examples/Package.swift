// swift-tools-version: 6.1
// A deployment's own plugins, built outside Campus Attest against its public plugin API.
//
// Copy this folder to start your own: point the path (or a git URL and version) at Campus
// Attest, keep your plugins in a library that depends only on `AttestPlugins`, and build an
// `attest` of your own that registers them (Sources/CampusAttest/main.swift).
import PackageDescription

// A path dependency's identity is the last component of its path (the folder the project was
// cloned into), so it is worked out here rather than spelled out.
let campusAttest = Context.packageDirectory.split(separator: "/").dropLast().last.map(String.init) ?? "campus-attest"

let package = Package(
    name: "attest-plugin-examples",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "campus-attest", targets: ["CampusAttest"]),
        .library(name: "ExamplePlugins", targets: ["ExamplePlugins"]),
    ],
    dependencies: [
        .package(path: "..")
    ],
    targets: [
        // The plugins: a badge rule, a testing-location provider and a notification sink.
        .target(
            name: "ExamplePlugins",
            dependencies: [.product(name: "AttestPlugins", package: campusAttest)]
        ),
        // `attest` with the example plugins registered beside the built-in ones.
        .executableTarget(
            name: "CampusAttest",
            dependencies: [
                "ExamplePlugins",
                .product(name: "AttestCLI", package: campusAttest),
                .product(name: "BuiltinPlugins", package: campusAttest),
            ]
        ),
        .testTarget(
            name: "ExamplePluginsTests",
            dependencies: [
                "ExamplePlugins",
                .product(name: "AttestPlugins", package: campusAttest),
                // The plugin test kit: a loopback server to deliver to (reached through the real
                // client the platform lends plugins), builders, and the badge-rule conformance check.
                .product(name: "AttestPluginsTesting", package: campusAttest),
            ]
        ),
    ]
)

import Foundation
import PackagePlugin

/// Embeds the package's `schema.sql` into the target as `embeddedSchemaSQL`, and each
/// migration under `Migrations/` (`NNNN-name.sql`) as `embeddedMigrations`, so the `attest`
/// binary carries the schema it migrates to and the files stay the one source.
@main
struct EmbedSchemaPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "schema.sql")
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedSchema.swift")
        let migrationsRoot = context.package.directoryURL.appending(path: "Migrations")
        let migrations = try FileManager.default.contentsOfDirectory(at: migrationsRoot, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "sql" }
        let migrationsOutput = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
        return [
            .buildCommand(
                displayName: "Embedding schema.sql",
                executable: try context.tool(named: "EmbedSQL").url,
                arguments: [input.path(), output.path(), "embeddedSchemaSQL"],
                inputFiles: [input],
                outputFiles: [output]
            ),
            .buildCommand(
                displayName: "Embedding the migrations",
                executable: try context.tool(named: "EmbedFiles").url,
                arguments: [migrationsOutput.path(), "embeddedMigrations", migrationsRoot.path()] + migrations.map { $0.path() },
                inputFiles: migrations,
                outputFiles: [migrationsOutput]
            ),
        ]
    }
}

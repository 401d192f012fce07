import AttestCLI
import AttestPlugins
import BuiltinPlugins

// A deployment's own executable registers its plugins here too (see Examples/).
PluginSystem.bootstrap(.builtin)
await AttestCommand.runAsRoot()

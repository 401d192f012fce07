// BuiltinPlugins: the badge rule, testing-location providers and sinks that ship in the box. Not built yet: see issues 4 and 5.

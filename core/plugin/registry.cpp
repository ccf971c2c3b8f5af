// Placeholder (issue 4): written by the plugin work.

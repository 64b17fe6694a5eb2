"""The extract commands: the command line (cli), bump, check, support and history."""

"""The use cases, each written once, above the engines and below the web and the command line."""

"""The management console: its pages, JSON API and operations endpoints, served on the node's HTTP port."""

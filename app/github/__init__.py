"""GitHub: the API client and its endpoints, role resolution, ancestry, the repository's config."""

"""The operation registry and what is generated from it: REST routes and the OpenAPI document."""

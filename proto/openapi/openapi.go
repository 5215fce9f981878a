// Package openapi embeds the OpenAPI document generated from Seam's protos
// and HTTP routes, so every service binary can serve it.
package openapi

import _ "embed"

// Document is the merged OpenAPI v2 document of all Seam services.
//
//go:embed seam.swagger.json
var Document []byte

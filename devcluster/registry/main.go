// The CNCF distribution registry (github.com/distribution/distribution/v3), built with only what
// the local registry uses: the filesystem storage driver and htpasswd auth. Upstream's
// cmd/registry also links the S3, GCS and Azure drivers, whose SDKs would triple a cold build.
package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() {
	// As upstream's cmd/registry: the commands exit non-zero themselves on failure.
	_ = registry.RootCmd.Execute()
}

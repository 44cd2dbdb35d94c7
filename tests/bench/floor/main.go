// Command floor is the start-up floor of the orchestrator: a main that
// links every package outside this module that cmd/orchestrator links,
// so their package initialisation runs as it does there, and does
// nothing else. Comparing `orchestrator version` with it shows what
// troupe's own initialisation and command dispatch add (tests/bench/startup.sh);
// floor_test.go keeps its imports equal to what cmd/orchestrator links.
//
// Linking a package is not all: Go's linker drops a package-level map
// that nothing reachable reads, and its initialisation with it. The
// orchestrator's web fetch parses HTML (golang.org/x/net/html's entity
// table, some 2,200 entries, built at init) and decodes pages' charsets
// (x/text's encoding index), so it pays for those tables at every start;
// a floor that imports the packages only for their side effects would not,
// and would measure x/net/html's init as troupe's. So main reaches the
// same entry points tools/web calls, behind an argument nothing passes.
package main

import (
	_ "bufio"
	"bytes"
	_ "cmp"
	_ "compress/zlib"
	_ "context"
	_ "crypto/hmac"
	_ "crypto/rand"
	_ "crypto/sha1"
	_ "crypto/sha256"
	_ "crypto/subtle"
	_ "crypto/tls"
	_ "crypto/x509"
	_ "embed"
	_ "encoding/base64"
	_ "encoding/binary"
	_ "encoding/hex"
	_ "encoding/json"
	_ "errors"
	_ "flag"
	_ "fmt"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	_ "github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	_ "github.com/asynkron/protoactor-go/actor"
	_ "github.com/bmatcuk/doublestar/v4"
	_ "github.com/elastic/go-seccomp-bpf"
	_ "github.com/elastic/go-seccomp-bpf/arch"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/google/uuid"
	_ "github.com/landlock-lsm/go-landlock/landlock"
	_ "github.com/landlock-lsm/go-landlock/landlock/syscall"
	_ "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/nats-io/jwt/v2"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/nats-io/nkeys"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/openai/openai-go/v3/option"
	_ "github.com/openai/openai-go/v3/packages/ssestream"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/rs/zerolog"
	_ "github.com/tidwall/gjson"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/attribute"
	_ "go.opentelemetry.io/otel/codes"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/propagation"
	_ "go.opentelemetry.io/otel/sdk/resource"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/semconv/v1.40.0"
	_ "go.opentelemetry.io/otel/trace"
	_ "golang.org/x/net/bpf"
	"golang.org/x/net/html"
	_ "golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	_ "golang.org/x/sys/unix"
	_ "gopkg.in/yaml.v3"
	_ "hash"
	_ "hash/crc32"
	_ "hash/fnv"
	_ "io"
	_ "io/fs"
	_ "log"
	_ "log/slog"
	_ "maps"
	_ "math"
	_ "math/rand/v2"
	_ "mime"
	_ "mvdan.cc/sh/v3/expand"
	_ "mvdan.cc/sh/v3/syntax"
	_ "net"
	_ "net/http"
	_ "net/netip"
	_ "net/url"
	"os"
	_ "os/exec"
	_ "os/signal"
	_ "path"
	_ "path/filepath"
	_ "reflect"
	_ "regexp"
	_ "regexp/syntax"
	_ "runtime"
	_ "runtime/debug"
	_ "slices"
	_ "sort"
	_ "strconv"
	_ "strings"
	_ "sync"
	_ "sync/atomic"
	_ "syscall"
	_ "text/tabwriter"
	_ "time"
	_ "unicode"
	_ "unicode/utf8"
	_ "unsafe"
)

func main() {
	// Never true in a measurement: it keeps what tools/web reaches.
	if len(os.Args) == 3 && os.Args[1] == "parse-html" {
		r, err := charset.NewReader(bytes.NewReader([]byte(os.Args[2])), "text/html")
		if err == nil {
			_, _ = html.Parse(r)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

func free() int { l, _ := net.Listen("tcp", "127.0.0.1:0"); p := l.Addr().(*net.TCPAddr).Port; l.Close(); return p }

func main() {
	ctx := context.Background()
	// standalone
	e, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true}, zerolog.Nop())
	if err != nil {
		panic(err)
	}
	nc, _ := nats.Connect(e.URL())
	js, _ := jetstream.New(nc)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "X", Subjects: []string{"x"}, Replicas: 3})
	fmt.Println("standalone R3:", err)
	if err == nil {
		fmt.Println(" replicas:", s.CachedInfo().Config.Replicas)
	}
	fmt.Println("standalone cluster name:", nc.ConnectedClusterName(), nc.Servers())
	nc.Close()
	e.Shutdown(ctx)

	var routes []string
	ports := []int{free(), free(), free()}
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var es []*bus.Embedded
	for i, n := range []string{"a", "b", "c"} {
		e, err := bus.StartEmbedded(ctx, bus.EmbeddedOptions{Ephemeral: true, ServerName: n, ClusterName: "x", ClusterPort: ports[i], Routes: routes}, zerolog.Nop())
		if err != nil {
			panic(err)
		}
		es = append(es, e)
	}
	nc, _ = nats.Connect(es[0].URL())
	js, _ = jetstream.New(nc)
	for {
		_, err := js.AccountInfo(ctx)
		if err == nil {
			break
		}
		fmt.Println("account info:", err)
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Println("cluster name:", nc.ConnectedClusterName(), nc.Servers(), nc.DiscoveredServers())
	s, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "R1", Subjects: []string{"r1"}, Replicas: 1})
	fmt.Println("R1:", err)
	c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
	fmt.Println("cons:", err)
	cfg := s.CachedInfo().Config
	cfg.Replicas = 3
	_, err = js.UpdateStream(ctx, cfg)
	fmt.Println("scale up:", err)
	time.Sleep(2 * time.Second)
	ci, err := c.Info(ctx)
	fmt.Println("consumer after scale:", err, ci.Config.Replicas, ci.Cluster)
	// one down
	es[2].Server().Shutdown()
	time.Sleep(6 * time.Second)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3"}, Replicas: 3})
	fmt.Printf("R3 with one down: %v %#v\n", err, err)
	var apiErr *jetstream.APIError
	if errorsAs(err, &apiErr) {
		fmt.Println("code", apiErr.Code, apiErr.ErrorCode)
	}
}

func errorsAs(err error, t **jetstream.APIError) bool {
	for err != nil {
		if a, ok := err.(*jetstream.APIError); ok {
			*t = a
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

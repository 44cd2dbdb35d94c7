package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func free() int { l, _ := net.Listen("tcp", "127.0.0.1:0"); p := l.Addr().(*net.TCPAddr).Port; l.Close(); return p }

func main() {
	var cports, rports []int
	var routes []string
	for i := 0; i < 3; i++ {
		cports = append(cports, free())
		rports = append(rports, free())
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", rports[i]))
	}
	procs := map[string]*exec.Cmd{}
	startS := func(i int) {
		name := string(rune('a' + i))
		cmd := exec.Command("/tmp/hubha/orchestrator", "serve", "--no-auth", "--listen", fmt.Sprintf("127.0.0.1:%d", cports[i]), "--store", "/tmp/hubha/store-"+name,
			"--cluster", "exp", "--name", name, "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", rports[i]), "--routes", strings.Join(routes, ","))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		procs[name] = cmd
	}
	for i := 0; i < 3; i++ {
		os.RemoveAll("/tmp/hubha/store-" + string(rune('a'+i)))
		startS(i)
	}
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
		}
	}()
	var urls []string
	for _, p := range cports {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { fmt.Println(time.Now().Format("15:04:05.000"), "disconnected", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { fmt.Println(time.Now().Format("15:04:05.000"), "reconnected", nc.ConnectedUrl()) }),
		nats.RetryOnFailedConnect(true))
	if err != nil {
		panic(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	var s jetstream.Stream
	for {
		s, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}, Replicas: 3, Storage: jetstream.FileStorage})
		if err == nil {
			break
		}
		fmt.Println("create:", err)
		time.Sleep(500 * time.Millisecond)
	}
	info, _ := s.Info(ctx)
	fmt.Println("leader", info.Cluster.Leader, "connected", nc.ConnectedServerName(), nc.Servers())
	cons, err := js.OrderedConsumer(ctx, "EV", jetstream.OrderedConsumerConfig{})
	if err != nil {
		panic(err)
	}
	var got uint64
	last := time.Now()
	cc, err := cons.Consume(func(m jetstream.Msg) {
		md, _ := m.Metadata()
		if md.Sequence.Stream != got+1 {
			fmt.Println("GAP", got, md.Sequence.Stream)
		}
		got = md.Sequence.Stream
		last = time.Now()
	}, jetstream.ConsumeErrHandler(func(cc jetstream.ConsumeContext, err error) {
		fmt.Println(time.Now().Format("15:04:05.000"), "consume err:", err)
	}))
	if err != nil {
		panic(err)
	}
	defer cc.Stop()
	pubN := func(from, n int) {
		for i := from; i < n; i++ {
			id := fmt.Sprintf("m%d", i)
			for {
				_, err := js.Publish(ctx, "ev.x", []byte(id), jetstream.WithMsgID(id+os.Args[1]))
				if err == nil {
					break
				}
				fmt.Println(time.Now().Format("15:04:05.000"), "pub err:", err)
				time.Sleep(200 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	pubN(0, 50)
	kill := func(victim string) {
		fmt.Println(time.Now().Format("15:04:05.000"), "killing", victim, "got", got)
		procs[victim].Process.Signal(syscall.SIGKILL)
		procs[victim].Wait()
	}
	info, _ = s.Info(ctx)
	v1 := info.Cluster.Leader
	if os.Args[1] == "conn" {
		v1 = nc.ConnectedServerName()
	}
	kill(v1)
	go func() { time.Sleep(10 * time.Second); startS(int(v1[0] - 'a')); fmt.Println(time.Now().Format("15:04:05.000"), "restarted", v1) }()
	pubN(50, 300)
	v2 := nc.ConnectedServerName()
	if v2 == v1 {
		info, _ = s.Info(ctx)
		v2 = info.Cluster.Leader
	}
	kill(v2)
	pubN(300, 500)
	fmt.Println(time.Now().Format("15:04:05.000"), "published all; got", got)
	for i := 0; i < 100 && got < 500; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	info, _ = s.Info(ctx)
	fmt.Println(time.Now().Format("15:04:05.000"), "end got", got, "stream msgs", info.State.Msgs, "last recv", last.Format("15:04:05.000"), "leader", info.Cluster.Leader)
}

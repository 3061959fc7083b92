// Echo peer and load client in one program.
//   go-echo server            : echo server, prints "listening on PORT"
//   go-echo client PORT C N   : C connections each doing N 16-byte round
//                               trips; prints "round-trips-per-s X"
//   go-echo idle PORT C S     : opens C connections and holds them S seconds
// Go's net sets TCP_NODELAY on every TCP connection by default.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

func server() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go func(c net.Conn) { io.Copy(c, c); c.Close() }(c)
	}
}

func client(port string, conns, rounds int) {
	addr := "127.0.0.1:" + port
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			msg := []byte("0123456789abcdef")
			buf := make([]byte, 16)
			for k := 0; k < rounds; k++ {
				if _, err := c.Write(msg); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
			}
			c.Close()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	fmt.Printf("round-trips-per-s %.0f\n", float64(conns*rounds)/secs)
}

func idle(port string, conns int, secs float64) {
	var held []net.Conn
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		held = append(held, c)
	}
	fmt.Printf("holding %d\n", len(held))
	time.Sleep(time.Duration(secs * float64(time.Second)))
}

func main() {
	switch os.Args[1] {
	case "server":
		server()
	case "client":
		c, _ := strconv.Atoi(os.Args[3])
		n, _ := strconv.Atoi(os.Args[4])
		client(os.Args[2], c, n)
	case "idle":
		c, _ := strconv.Atoi(os.Args[3])
		s, _ := strconv.ParseFloat(os.Args[4], 64)
		idle(os.Args[2], c, s)
	}
}

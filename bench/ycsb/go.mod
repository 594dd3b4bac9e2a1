module roaringd/bench/ycsb

go 1.19

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.2
	github.com/go-redis/redis/v9 v9.0.0-rc.1
	github.com/magiconair/properties v1.8.0
	github.com/pingcap/go-ycsb v1.0.3
)

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/mattn/go-runewidth v0.0.9 // indirect
	github.com/olekukonko/tablewriter v0.0.5 // indirect
	github.com/pingcap/errors v0.11.5-0.20211224045212-9687c2b0f87c // indirect
	go.uber.org/atomic v1.9.0 // indirect
)

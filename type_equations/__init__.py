"""The spec files: examples, and the benchmark variants of tpcb/ and oo7/ (shipped as
package data so `p2gen bench` finds them when installed)."""

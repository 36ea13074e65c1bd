/* dns_blackhole.c -- a resolver that never answers: binds a UDP socket at
 * ADDR:53 (default 127.0.0.53), reads every query and drops it, until
 * killed. bench/hosts.sh runs it inside the private network namespace of
 * test/hosts/ns_run.sh, whose /etc/resolv.conf points there, so a name
 * missing from /etc/hosts makes getaddrinfo wait out its timeouts. */
#include <arpa/inet.h>
#define _POSIX_C_SOURCE 200809L
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *addr = argc > 1 ? argv[1] : "127.0.0.53";
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        perror("dns_blackhole: bind");
        return 1;
    }
    char buf[2048];
    for (;;)
        if (recv(fd, buf, sizeof buf, 0) < 0) return 1;
}

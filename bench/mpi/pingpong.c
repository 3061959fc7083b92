/* The C baseline of `spindle bench mpi` (bench/mpi.ss): between ranks 0
   and 1, the mean round trip of 8-byte messages (MPI_Send, MPI_Recv) and
   the bandwidth of 1 MiB messages sent one way (then a 1-byte answer).
   Prints "pingpong-8b-us X" (the median round trip: on a shared machine
   the mean is the other processes' time slices), "pingpong-8b-mean-us M"
   and "bandwidth-1mb-mbs Y".  With one rank: the CPU time of an 8-byte
   send to itself and its receive, "self-8b-cpu-us Z" (the software cost
   of a message, which a loaded machine's scheduling does not blur). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int rank, provided, iters = argc > 1 ? atoi(argv[1]) : 20000, big = argc > 2 ? atoi(argv[2]) : 200;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1) {
    char out[8] = {1}, in[8];
    int n = iters * 10;
    for (int round = 0; round < 2; round++) {
      clock_t c0 = clock();
      for (int i = 0; i < n; i++) {
        MPI_Request q;
        MPI_Isend(out, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &q);
        MPI_Recv(in, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
      }
      if (round == 1) printf("self-8b-cpu-us %.3f\n", (double) (clock() - c0) / CLOCKS_PER_SEC / n * 1e6);
    }
    MPI_Finalize();
    return 0;
  }
  char small[8] = {1}, *buf = malloc(1 << 20);
  /* written, as spindle's bytevectors are: pages never touched all map the
     kernel's one zero page, which the receiver then reads from cache
     (twice the bandwidth of real memory on this machine) */
  memset(buf, 7, 1 << 20);
  double *ts = malloc(iters * sizeof(double));
  for (int round = 0; round < 2; round++) {          /* the first is a warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
      if (rank == 0) {
        double t = MPI_Wtime();
        MPI_Send(small, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(small, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ts[i] = MPI_Wtime() - t;
      } else {
        MPI_Recv(small, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(small, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    double mean = (MPI_Wtime() - t0) / iters * 1e6;
    qsort(ts, iters, sizeof(double), by_value);
    double rtt = ts[iters / 2] * 1e6;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < big; i++) {
      if (rank == 0) MPI_Send(buf, 1 << 20, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      else MPI_Recv(buf, 1 << 20, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0) MPI_Recv(small, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else MPI_Send(small, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    double mbs = big * (double) (1 << 20) / (MPI_Wtime() - t0) / 1e6;
    if (rank == 0 && round == 1) printf("pingpong-8b-us %.3f\npingpong-8b-mean-us %.3f\nbandwidth-1mb-mbs %.1f\n", rtt, mean, mbs);
  }
  free(buf); free(ts);
  MPI_Finalize();
  return 0;
}

// A linked list built on the host in managed memory (one cudaMallocManaged
// per node, so nodes share pages), walked and modified by a kernel, then read
// back on the host.
#define NAME "managed_linked_list"
#include "check.h"

struct Node {
  int value;
  Node* next;
};

// One thread walks the list: sums the values and doubles each.
__global__ void walk(Node* head, long long* sum, int* length) {
  long long s = 0;
  int len = 0;
  for (Node* n = head; n; n = n->next) {
    s += n->value;
    n->value *= 2;
    ++len;
  }
  *sum = s;
  *length = len;
}

int main() {
  const int count = 1000;
  Node* head = nullptr;
  long long expected = 0;
  for (int i = 0; i < count; ++i) {  // pushed at the front: values count-1 .. 0
    Node* node;
    CK(cudaMallocManaged(&node, sizeof(Node)));
    node->value = i * 7 % 101;
    node->next = head;
    head = node;
    expected += node->value;
  }
  long long* sum;
  int* length;
  CK(cudaMallocManaged(&sum, sizeof *sum));
  CK(cudaMallocManaged(&length, sizeof *length));
  walk<<<1, 1>>>(head, sum, length);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  int wrong = 0, i = count - 1;
  for (Node* n = head; n; n = n->next, --i)
    if (n->value != 2 * (i * 7 % 101)) ++wrong;
  printf("length %d sum %lld (expected %lld)\n", *length, *sum, expected);
  const bool ok = *length == count && *sum == expected && wrong == 0 && i == -1;
  for (Node* n = head; n;) {
    Node* next = n->next;
    CK(cudaFree(n));
    n = next;
  }
  CK(cudaFree(sum));
  CK(cudaFree(length));
  printf("RESULT %s %s nodes=%d doubled_wrong=%d\n", NAME, ok ? "PASS" : "FAIL", count, wrong);
  return ok ? 0 : 1;
}

// The hidden tables NVIDIA's libraries ask the driver for (cuBLAS's
// 21318c60, cuBLASLt's 1734dc26, cuFFT's 6e163fbe), served by the client
// itself; export_tables.cc hands them out (docs/export-tables.md).
#pragma once

namespace scuda::client {

// Each table's words, at one address for the life of the process.
const void* cublas_private_table();
const void* cublaslt_table_1734dc26();
const void* cufft_table_6e163fbe();

}  // namespace scuda::client

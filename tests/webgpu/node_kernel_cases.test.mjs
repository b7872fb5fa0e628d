// Half 1 of the kernel-level cases on WebGPU (kernel_case_tests.mjs; the other, node_kernel_cases_b.test.mjs).
import { kernelCaseTests } from './kernel_case_tests.mjs';

kernelCaseTests(0);

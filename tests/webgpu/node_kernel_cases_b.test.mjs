// Half 2 of the kernel-level cases on WebGPU (kernel_case_tests.mjs; the other, node_kernel_cases.test.mjs).
import { kernelCaseTests } from './kernel_case_tests.mjs';

kernelCaseTests(1);

// The stand-in's kernel (ci/gpu-bundle/standin.c): the 32 threads of one
// warp add their indices into *out (0 + 1 + … + 31 = 496), so the result
// shows that the kernel ran on the device, not only that it was launched.
extern "C" __global__ void probe(int *out) { atomicAdd(out, (int)threadIdx.x); }

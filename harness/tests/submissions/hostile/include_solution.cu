// Attack: hand in the course's own solution, renamed by a macro, instead of writing one.
#define reduce_shuffle reduce
#include "kernels/reduce_shuffle.cu"

	.text
	.p2align 4
	.globl	matmul
	.type	matmul, @function
matmul:
	.cfi_startproc
	testl	%edi, %edi
	jle	.Lc_matmul_ret
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.cfi_offset 3, -16
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset 6, -24
	pushq	%r12
	.cfi_def_cfa_offset 32
	.cfi_offset 12, -32
	movslq	%edi, %rbx
	leaq	0(,%rbx,4), %r8
	movl	%edi, %r9d
	.p2align 4,,10
	.p2align 3
.Lc_matmul_row:
	leaq	(%rsi,%r8), %rdi
	xorl	%r10d, %r10d
.Lc_matmul_b8:
	leaq	8(%r10), %rax
	cmpq	%rbx, %rax
	jg	.Lc_matmul_b4
	leaq	(%rdx,%r10,4), %r11
	movq	%rsi, %rax
	pxor	%xmm0, %xmm0
	pxor	%xmm1, %xmm1
	pxor	%xmm2, %xmm2
	pxor	%xmm3, %xmm3
	.p2align 4,,10
	.p2align 3
.Lc_matmul_k8:
	movd	(%rax), %xmm4
	pshufd	$0, %xmm4, %xmm4
	movdqu	(%r11), %xmm5
	movdqu	16(%r11), %xmm6
	pshufd	$245, %xmm5, %xmm7
	pshufd	$245, %xmm6, %xmm8
	pmuludq	%xmm4, %xmm5
	pmuludq	%xmm4, %xmm7
	pmuludq	%xmm4, %xmm6
	pmuludq	%xmm4, %xmm8
	paddd	%xmm5, %xmm0
	paddd	%xmm7, %xmm1
	paddd	%xmm6, %xmm2
	paddd	%xmm8, %xmm3
	addq	$4, %rax
	addq	%r8, %r11
	cmpq	%rdi, %rax
	jne	.Lc_matmul_k8
	pshufd	$8, %xmm0, %xmm0
	pshufd	$8, %xmm1, %xmm1
	punpckldq	%xmm1, %xmm0
	movdqu	%xmm0, (%rcx,%r10,4)
	pshufd	$8, %xmm2, %xmm2
	pshufd	$8, %xmm3, %xmm3
	punpckldq	%xmm3, %xmm2
	movdqu	%xmm2, 16(%rcx,%r10,4)
	addq	$8, %r10
	jmp	.Lc_matmul_b8
.Lc_matmul_b4:
	leaq	4(%r10), %rax
	cmpq	%rbx, %rax
	jg	.Lc_matmul_tail
	leaq	(%rdx,%r10,4), %r11
	movq	%rsi, %rax
	pxor	%xmm0, %xmm0
	pxor	%xmm1, %xmm1
	.p2align 4,,10
	.p2align 3
.Lc_matmul_k4:
	movd	(%rax), %xmm4
	pshufd	$0, %xmm4, %xmm4
	movdqu	(%r11), %xmm5
	pshufd	$245, %xmm5, %xmm7
	pmuludq	%xmm4, %xmm5
	pmuludq	%xmm4, %xmm7
	paddd	%xmm5, %xmm0
	paddd	%xmm7, %xmm1
	addq	$4, %rax
	addq	%r8, %r11
	cmpq	%rdi, %rax
	jne	.Lc_matmul_k4
	pshufd	$8, %xmm0, %xmm0
	pshufd	$8, %xmm1, %xmm1
	punpckldq	%xmm1, %xmm0
	movdqu	%xmm0, (%rcx,%r10,4)
	addq	$4, %r10
.Lc_matmul_tail:
	cmpq	%rbx, %r10
	jge	.Lc_matmul_next
	leaq	(%rdx,%r10,4), %r11
	movq	%rsi, %rax
	xorl	%ebp, %ebp
	.p2align 4,,10
	.p2align 3
.Lc_matmul_ks:
	movl	(%rax), %r12d
	imull	(%r11), %r12d
	addl	%r12d, %ebp
	addq	$4, %rax
	addq	%r8, %r11
	cmpq	%rdi, %rax
	jne	.Lc_matmul_ks
	movl	%ebp, (%rcx,%r10,4)
	addq	$1, %r10
	jmp	.Lc_matmul_tail
.Lc_matmul_next:
	addq	%r8, %rsi
	addq	%r8, %rcx
	subl	$1, %r9d
	jne	.Lc_matmul_row
	popq	%r12
	.cfi_def_cfa_offset 24
	popq	%rbp
	.cfi_def_cfa_offset 16
	popq	%rbx
	.cfi_def_cfa_offset 8
.Lc_matmul_ret:
	ret
	.cfi_endproc
	.size	matmul, .-matmul

	.text
	.p2align 4
	.globl	histogram
	.type	histogram, @function
histogram:
	.cfi_startproc
	subq	$4096, %rsp
	.cfi_def_cfa_offset 4104
	movq	%rdi, %r8
	movq	%rsp, %rdi
	movl	$512, %ecx
	xorl	%eax, %eax
	rep stosq
	testq	%rsi, %rsi
	jle	.Lc_histogram_5
	leaq	(%r8,%rsi), %rsi
	leaq	-3(%rsi), %rdi
	cmpq	%rdi, %r8
	jnb	.Lc_histogram_3
	.p2align 4,,10
	.p2align 3
.Lc_histogram_2:
	movzbl	(%r8), %eax
	movzbl	1(%r8), %ecx
	addl	$1, (%rsp,%rax,4)
	addl	$1, 1024(%rsp,%rcx,4)
	movzbl	2(%r8), %eax
	movzbl	3(%r8), %ecx
	addl	$1, 2048(%rsp,%rax,4)
	addl	$1, 3072(%rsp,%rcx,4)
	addq	$4, %r8
	cmpq	%rdi, %r8
	jb	.Lc_histogram_2
.Lc_histogram_3:
	cmpq	%rsi, %r8
	jnb	.Lc_histogram_5
.Lc_histogram_4:
	movzbl	(%r8), %eax
	addl	$1, (%rsp,%rax,4)
	addq	$1, %r8
	cmpq	%rsi, %r8
	jb	.Lc_histogram_4
.Lc_histogram_5:
	xorl	%eax, %eax
	.p2align 4,,10
	.p2align 3
.Lc_histogram_6:
	movl	(%rsp,%rax,4), %ecx
	addl	1024(%rsp,%rax,4), %ecx
	addl	2048(%rsp,%rax,4), %ecx
	addl	3072(%rsp,%rax,4), %ecx
	movl	%ecx, (%rdx,%rax,4)
	addq	$1, %rax
	cmpq	$256, %rax
	jne	.Lc_histogram_6
	addq	$4096, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	histogram, .-histogram
